from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "gridweb.accounts"
    label = "accounts"
    verbose_name = "Accounts and research groups"

    def ready(self) -> None:
        from . import throttle  # noqa: F401 - connects the failed-login counters
