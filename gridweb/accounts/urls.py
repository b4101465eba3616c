"""Logging in and out, changing the password, and the user's own page (groups, API token)."""

from django.contrib.auth import views as auth_views
from django.urls import path, reverse_lazy

from . import views
from .forms import LoginForm

app_name = "accounts"

urlpatterns = [
    path("login/", auth_views.LoginView.as_view(template_name="accounts/login.html",
                                                authentication_form=LoginForm,
                                                redirect_authenticated_user=True), name="login"),
    # Django's LogoutView answers POST only (a GET link could log people out from another site).
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("password/", auth_views.PasswordChangeView.as_view(
        template_name="accounts/password_change.html", success_url=reverse_lazy("accounts:password_change_done")),
        name="password_change"),
    path("password/done/", auth_views.PasswordChangeDoneView.as_view(
        template_name="accounts/password_change_done.html"), name="password_change_done"),
    path("me/", views.profile, name="profile"),
    path("me/token/", views.regenerate_token, name="token"),
]
