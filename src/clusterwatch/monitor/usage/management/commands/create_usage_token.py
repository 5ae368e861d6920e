"""`clusterwatch monitor create_usage_token USER [--note TEXT]`: an API token (the usage API and
the image-demand API; `clusterwatch.monitor.core.api_tokens`).

The token acts as USER (an existing account; LDAP users exist once they have logged in) and
sees what USER sees. It is printed once, as the last line; only its digest is kept.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from clusterwatch.monitor.core import api_tokens


class Command(BaseCommand):
    help = ("Create an API token for scripts reading the usage and image-demand APIs as USER "
            "(Authorization: Bearer <token>); printed once, as the last line.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("user", metavar="USER", help="the account the token acts as")
        parser.add_argument("--note", default="", help="what the token is for (200 chars)")

    def handle(self, *args: Any, **options: Any) -> None:
        model = get_user_model()
        user = model.objects.filter(**{model.USERNAME_FIELD: options["user"]}).first()
        if user is None or not user.is_active:
            raise CommandError(f"no active account {options['user'][:64]!r} (an LDAP user "
                               "exists here once they have logged in)")
        note: str = options["note"]
        if len(note) > 200:
            raise CommandError(f"--note is {len(note)} characters; at most 200")
        row, token = api_tokens.create(user, note)
        self.stdout.write(f"user: {user.get_username()}")
        self.stdout.write(f"prefix: {row.prefix}")
        self.stdout.write("The token is on the next line and is shown only this once:")
        self.stdout.write(token)
