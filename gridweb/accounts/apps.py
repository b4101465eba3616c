from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "gridweb.accounts"
    label = "accounts"
    verbose_name = "Accounts and research groups"

    def ready(self) -> None:
        from . import middleware, throttle  # noqa: F401 - connect the one-time-password flag and login counters
