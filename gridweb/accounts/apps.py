from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "gridweb.accounts"
    label = "accounts"
    verbose_name = "Accounts and research groups"
