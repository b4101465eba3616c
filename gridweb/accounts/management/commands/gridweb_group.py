"""Research groups from the command line (what an administrator does on the server).

    python manage.py gridweb_group create NAME
    python manage.py gridweb_group invite NAME USERNAME --email E [--password P]
    python manage.py gridweb_group list

``invite`` creates the user when needed, with a random one-time password printed once
(unless ``--password`` is given), and adds them to the group. A one-time password logs in once,
within ``GRIDWEB_INVITE_PASSWORD_DAYS`` days, and must be changed at that login
(gridweb/accounts/middleware.py) before anything else works. Inviting a user who has not chosen
a password of their own yet gives them a fresh one-time password.
"""

from __future__ import annotations

import secrets

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.core.validators import validate_email
from django.db import transaction

from gridweb.accounts.models import PasswordChangeRequired


class Command(BaseCommand):
    help = "Create research groups, invite users into them, list them."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True, metavar="{create,invite,list}")
        create = actions.add_parser("create", help="create a research group")
        create.add_argument("name", help="the group's name")
        invite = actions.add_parser("invite", help="add a user (created if needed) to a group")
        invite.add_argument("name", help="the group's name")
        invite.add_argument("username")
        invite.add_argument("--email", help="the user's e-mail address (required for a new user)")
        invite.add_argument("--password", help="password of a new user (default: a random one, printed once)")
        actions.add_parser("list", help="list the groups and their members")

    def handle(self, *args, action: str, **options) -> None:
        if action == "create":
            self.create(options["name"])
        elif action == "invite":
            self.invite(options["name"], options["username"], options.get("email"), options.get("password"))
        else:
            self.list()

    def create(self, name: str) -> None:
        name = name.strip()
        if not name:
            raise CommandError("the group name must not be empty")
        if len(name) > Group._meta.get_field("name").max_length:
            raise CommandError(f"the group name is longer than {Group._meta.get_field('name').max_length} characters")
        if Group.objects.filter(name__iexact=name).exists():
            raise CommandError(f"a group named {name!r} already exists")
        Group.objects.create(name=name)
        self.stdout.write(f"Created research group {name!r}.")

    def invite(self, group_name: str, username: str, email: str | None, password: str | None) -> None:
        group = Group.objects.filter(name=group_name).first()
        if group is None:
            raise CommandError(f"no research group named {group_name!r}; "
                               f"create it first: manage.py gridweb_group create {group_name}")
        User = get_user_model()
        user = User.objects.filter(username=username).first()
        if user is not None:
            if password is not None:
                raise CommandError(f"user {username!r} already exists; --password only sets a new user's "
                                   f"password (use manage.py changepassword {username})")
            if email and user.email and user.email.lower() != email.lower():
                raise CommandError(f"user {username!r} already exists with the e-mail {user.email}, not {email}")
            # still on an invite's one-time password (unused, used or expired): a fresh one, so that
            # inviting again is how an administrator lets in someone whose password ran out
            renew = PasswordChangeRequired.objects.filter(user=user).exists()
            fresh = secrets.token_urlsafe(12)
            with transaction.atomic():
                if email and not user.email:
                    user.email = email
                    user.save(update_fields=["email"])
                user.groups.add(group)
                if renew:
                    user.set_password(fresh)
                    user.save(update_fields=["password"])
                    PasswordChangeRequired.objects.filter(user=user).delete()
                    PasswordChangeRequired.objects.create(user=user)
            self.stdout.write(f"Added existing user {username!r} to {group.name!r}.")
            if renew:
                self.stdout.write(f"One-time password, a new one (they had not chosen their own yet; shown only "
                                  f"now; valid {settings.GRIDWEB_INVITE_PASSWORD_DAYS} days, for one login): {fresh}")
            return

        if not email:
            raise CommandError(f"user {username!r} does not exist yet; give their e-mail with --email")
        try:
            validate_email(email)
        except ValidationError as exc:
            raise CommandError(f"--email {email!r}: {' '.join(exc.messages)}") from exc
        try:
            User.username_validator(username)
        except ValidationError as exc:
            raise CommandError(f"username {username!r}: {' '.join(exc.messages)}") from exc
        generated = password is None
        if generated:
            password = secrets.token_urlsafe(12)
        else:
            candidate = User(username=username, email=email)
            try:
                validate_password(password, candidate)
            except ValidationError as exc:
                raise CommandError(f"--password: {' '.join(exc.messages)}") from exc
        with transaction.atomic():
            user = User.objects.create_user(username=username, email=email, password=password)
            user.groups.add(group)
            if generated:  # a one-time password: the first thing they do is choose their own
                PasswordChangeRequired.objects.create(user=user)
        self.stdout.write(f"Created user {username!r} <{email}> in {group.name!r}.")
        if generated:
            self.stdout.write(f"One-time password (shown only now; valid {settings.GRIDWEB_INVITE_PASSWORD_DAYS} "
                              f"days, for one login, where they choose their own): {password}")

    def list(self) -> None:
        groups = Group.objects.order_by("name").prefetch_related("user_set")
        if not groups:
            self.stdout.write("No research groups yet (manage.py gridweb_group create NAME).")
            return
        for group in groups:
            members = sorted(u.username for u in group.user_set.all())
            self.stdout.write(f"{group.name} ({len(members)} member{'s' if len(members) != 1 else ''}): "
                              f"{', '.join(members) if members else '-'}")
