"""Who may read the operators' pages: staff, superusers, and the members of one group.

The hosts, queues, jobs, alarms and worker-starts pages show every harvester's hosts, log
lines, failed calls and alarms; a researcher who logs in to read their own usage reports
sees none of them. An operator is a staff user, a superuser, or a member of the Django group
`operators` (made by migration 0008; the admin adds people to it, and with
CLUSTERWATCH_LDAP_OPERATORS_GROUP every LDAP login sets the membership from the directory).

Kernel: Django's auth models only, so the pages, the navigation and the LDAP backend share
one rule without importing each other.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import Group

GROUP = "operators"
# Cached on the user object, which lives for one request: the guard and the navigation ask
# on every page, and a group lookup is a query.
_CACHED = "_clusterwatch_is_operator"


def is_operator(user: Any) -> bool:
    """Whether `user` (request.user: anonymous, inactive, or a user) may open the pages."""
    if not getattr(user, "is_authenticated", False) or not getattr(user, "is_active", False):
        return False
    if user.is_staff or user.is_superuser:
        return True
    cached = getattr(user, _CACHED, None)
    if cached is None:
        cached = user.groups.filter(name=GROUP).exists()
        setattr(user, _CACHED, cached)
    return bool(cached)


def set_operator(user: Any, member: bool) -> None:
    """Adds `user` (saved) to the operators group, or takes them out of it. The group is made
    when missing: a database flushed by tests, or one migrated before the group existed."""
    group, _ = Group.objects.get_or_create(name=GROUP)
    if member:
        user.groups.add(group)
    else:
        user.groups.remove(group)
    if hasattr(user, _CACHED):
        delattr(user, _CACHED)
