"""The LDAP login backend: django-auth-ldap with the monitor's rules and a clear message.

1. The Django user name is the directory's value of the username attribute (`uid`), as
   stored, whatever case or spaces the user typed: the usage reports match it against the
   Slurm user of each job. An entry whose attribute cannot be read does not log in.
2. A local account (one with a usable Django password, made by `createsuperuser` or in the
   admin) is never taken over by a directory entry of the same name: the LDAP backend
   refuses that name and the local password decides (ModelBackend, next in line).
3. With AUTH_LDAP_OPERATORS_GROUP (CLUSTERWATCH_LDAP_OPERATORS_GROUP), every LDAP login
   sets the user's membership of the Django group `operators` from the directory's group:
   added when a member, taken out when not, as django-auth-ldap sets "staff".

When the directory cannot be asked (down, too slow, TLS refused), django-auth-ldap logs the
error and the login form would only say "wrong user name or password"; the `ldap_error`
receiver below adds a message saying the directory did not answer, shown on the login page.

Settings: clusterwatch.monitor.site.ldap_settings (AUTH_LDAP_*). This module is imported by
Django's auth when it first authenticates, after the apps are loaded.
"""

from __future__ import annotations

import logging
from typing import Any, Optional

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.http import HttpRequest
from django_auth_ldap.backend import LDAPBackend, ldap_error, populate_user
from django_auth_ldap.config import LDAPGroupQuery

from clusterwatch.monitor.core.operators import set_operator

logger = logging.getLogger(__name__)

DIRECTORY_DOWN = ("Your site account could not be checked: the directory server (LDAP) did "
                  "not answer or refused the request. Try again in a few minutes; if it "
                  "goes on, tell the monitor's operators. Local accounts still log in.")
_NOTED = "_clusterwatch_directory_down"  # request attribute: the message is added once
_MEMBER = "_clusterwatch_ldap_operator"  # user attribute: the membership read at login


class DirectoryBackend(LDAPBackend):
    # Read as AUTH_LDAP_USERNAME_ATTR, beside django-auth-ldap's own settings.
    default_settings = {"USERNAME_ATTR": "uid", "OPERATORS_GROUP": None}

    def authenticate_ldap_user(self, ldap_user: Any, password: str) -> Any:
        user = super().authenticate_ldap_user(ldap_user, password)
        # The membership was read while populating (where a directory error refuses the
        # login); it is written now that a new user has been saved.
        member = getattr(user, _MEMBER, None)
        if user is not None and member is not None:
            set_operator(user, member)
        return user

    def get_or_build_user(self, username: str, ldap_user: Any) -> tuple[Any, bool]:
        name = self._directory_name(ldap_user)
        if name is None:
            raise ldap_user.AuthenticationFailed(
                f"the entry has no readable {self.settings.USERNAME_ATTR} attribute")
        model = get_user_model()
        user = model.objects.filter(**{model.USERNAME_FIELD: name}).first()
        if user is None:
            return model(**{model.USERNAME_FIELD: name}), True
        if user.has_usable_password():
            raise ldap_user.AuthenticationFailed("a local account has this name")
        return user, False

    def get_user(self, user_id: Any) -> Any:
        """The session's user, None once the admin deactivated them: ModelBackend's rule,
        which django-auth-ldap leaves out, so that unticking Active logs them out now."""
        user = super().get_user(user_id)
        return user if user is not None and user.is_active else None

    def _directory_name(self, ldap_user: Any) -> Optional[str]:
        attrs = ldap_user.attrs or {}
        values = attrs.get(self.settings.USERNAME_ATTR) or attrs.get(
            self.settings.USERNAME_ATTR.lower()) or []
        # Values come back as str (bytes_mode off); a multi-valued uid takes the first.
        name = str(values[0]).strip() if values else ""
        return name or None


def _directory_failed(sender: type, context: str, user: Any, request: Optional[HttpRequest],
                      exception: Exception, **kwargs: Any) -> None:
    """Puts DIRECTORY_DOWN on the page the login answers with (once per request)."""
    if request is None or getattr(request, _NOTED, False):
        return
    setattr(request, _NOTED, True)
    messages.error(request, DIRECTORY_DOWN, fail_silently=True)


def _read_operator(sender: type, user: Any, ldap_user: Any, **kwargs: Any) -> None:
    """Notes on `user` whether the directory has them in the operators group."""
    group = ldap_user.settings.OPERATORS_GROUP
    if group:
        setattr(user, _MEMBER, bool(LDAPGroupQuery(group).resolve(ldap_user)))


populate_user.connect(_read_operator, sender=DirectoryBackend,
                      dispatch_uid="clusterwatch.monitor.site.ldap_backend.operators")
ldap_error.connect(_directory_failed, sender=DirectoryBackend,
                   dispatch_uid="clusterwatch.monitor.site.ldap_backend")
