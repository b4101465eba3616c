"""Logging in and out, changing the password, and the user's own page (groups, API token)."""

from django.contrib.auth import views as auth_views
from django.urls import path, reverse_lazy

from . import views
from .forms import LoginForm

app_name = "accounts"

urlpatterns = [
    path("login/", views.LoginView.as_view(template_name="accounts/login.html",
                                                authentication_form=LoginForm,
                                                redirect_authenticated_user=True), name="login"),
    # Django's LogoutView answers POST only (a GET link could log people out from another site).
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("password/", views.PasswordChangeView.as_view(
        template_name="accounts/password_change.html", success_url=reverse_lazy("accounts:password_change_done")),
        name="password_change"),
    # a forgotten password: a link by e-mail (settings.EMAIL_BACKEND; the console in embedded mode)
    path("password/reset/", auth_views.PasswordResetView.as_view(
        template_name="accounts/password_reset.html", email_template_name="accounts/password_reset_email.txt",
        subject_template_name="accounts/password_reset_subject.txt",
        success_url=reverse_lazy("accounts:password_reset_done")), name="password_reset"),
    path("password/reset/sent/", auth_views.PasswordResetDoneView.as_view(
        template_name="accounts/password_reset_sent.html"), name="password_reset_done"),
    path("password/reset/<uidb64>/<token>/", views.PasswordResetConfirmView.as_view(
        template_name="accounts/password_reset_confirm.html",
        success_url=reverse_lazy("accounts:password_reset_complete")), name="password_reset_confirm"),
    path("password/reset/done/", auth_views.PasswordResetCompleteView.as_view(
        template_name="accounts/password_reset_complete.html"), name="password_reset_complete"),
    path("password/done/", auth_views.PasswordChangeDoneView.as_view(
        template_name="accounts/password_change_done.html"), name="password_change_done"),
    path("me/", views.profile, name="profile"),
    path("me/token/", views.regenerate_token, name="token"),
]
