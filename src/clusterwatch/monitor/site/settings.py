"""Django settings, from the environment (see docs/monitor.md for the full list).

CLUSTERWATCH_DATA_DIR          where the SQLite database and the generated secret key live
                               (default ~/.local/share/clusterwatch)
CLUSTERWATCH_DATABASE_URL      sqlite:///path or postgresql://user@host:port/name
CLUSTERWATCH_DATABASE_PASSWORD_FILE  PostgreSQL password, mode 600 (default: the systemd
                               credential db-password, $CREDENTIALS_DIRECTORY/db-password)
CLUSTERWATCH_SECRET_KEY        Django's secret key; when unset, one is generated once into
                               DATA_DIR/secret_key (mode 600)
CLUSTERWATCH_DEBUG             1/true for Django's debug pages (never in production)
CLUSTERWATCH_ALLOWED_HOSTS     comma-separated host names served (default: loopback names)
CLUSTERWATCH_MAX_RECORD_BYTES  largest accepted record body (default 1 MiB)
CLUSTERWATCH_RETENTION_DAYS    how long records are kept (default 30)
CLUSTERWATCH_REPORT_INTERVAL_S the reporters' cron interval; a key is stale after three
                               (default 300)
CLUSTERWATCH_MAX_CLOCK_SKEW_S  how far ahead of the monitor's clock a record's collected_at
                               may be; further ahead is refused and never latest (default 600)
CLUSTERWATCH_ALARMS_CONFIG     TOML file with the alarm channels (default DATA_DIR/alarms.toml)
CLUSTERWATCH_BEHIND_TLS_PROXY  1/true behind a TLS-terminating proxy that sets
                               X-Forwarded-Proto: secure cookies, https from that header
CLUSTERWATCH_PROMETHEUS_URL    turns the usage reports on (the rest of their settings:
                               clusterwatch.monitor.usage.config, docs/usage.md)
CLUSTERWATCH_EMAIL_*           the end-of-job email (clusterwatch.monitor.usage.mail.settings)

A malformed value raises SettingError (a ValueError; clusterwatch.monitor.core.secrets) with
a message that starts with the variable's name (`clusterwatch monitor` turns it into a
configuration error, exit 78) and holds no secret.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import tempfile
from pathlib import Path

from clusterwatch.monitor.core import database_url, prefixed_settings
from clusterwatch.monitor.core.secrets import SettingError, read_secret_file
from clusterwatch.monitor.site import ldap_settings
from clusterwatch.monitor.usage.mail import settings as mail_settings


def _flag(name: str) -> bool:
    # A typo must not silently turn DEBUG off, or the proxy settings on: refused, not off.
    return prefixed_settings.flag({name: os.environ.get(name, "").strip()}, name)


def _int(name: str, default: int) -> int:
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    try:
        number = int(value)
    except ValueError:
        raise SettingError(f"{name} must be a whole number, not {value[:40]!r}") from None
    if number <= 0:
        raise SettingError(f"{name} must be positive, not {number}")
    return number


def _secret_key(data_dir: Path) -> str:
    """CLUSTERWATCH_SECRET_KEY, else DATA_DIR/secret_key, made once (mode 600) if absent.

    Several gunicorn workers start at once: the key is written to a private temporary file
    and linked into place, so a worker sees either no file or the whole key, never an empty
    one, and all of them end up with the same key.
    """
    key = os.environ.get("CLUSTERWATCH_SECRET_KEY", "").strip()
    if key:
        return key
    path = data_dir / "secret_key"
    if not path.exists():
        data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(prefix=".secret_key-", dir=data_dir)  # mode 600
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(secrets.token_urlsafe(50) + "\n")
                handle.flush()
                os.fsync(handle.fileno())
            with contextlib.suppress(FileExistsError):  # another worker was first: use its
                os.link(temporary, path)
        finally:
            os.unlink(temporary)
    return read_secret_file(
        str(path), "CLUSTERWATCH_DATA_DIR", credentials_dir="",  # never a systemd credential
        if_empty="; remove it to have a new key made (this logs everyone out) or set "
                 "CLUSTERWATCH_SECRET_KEY")


BASE_DIR = Path(__file__).resolve().parent
DATA_DIR = Path(
    os.environ.get("CLUSTERWATCH_DATA_DIR") or Path.home() / ".local" / "share" / "clusterwatch"
).expanduser().absolute()

DEBUG = _flag("CLUSTERWATCH_DEBUG")
SECRET_KEY = _secret_key(DATA_DIR)
ALLOWED_HOSTS = [
    host.strip()
    for host in os.environ.get("CLUSTERWATCH_ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]").split(",")
    if host.strip()
]

DATABASES = {
    "default": database_url.parse(os.environ["CLUSTERWATCH_DATABASE_URL"],
                                   database_url.password_file(os.environ))
    if os.environ.get("CLUSTERWATCH_DATABASE_URL", "").strip()
    else database_url.sqlite(DATA_DIR / "monitor.sqlite3")
}
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    # The database holds every record and the token digests: private to the monitor's user.
    Path(DATABASES["default"]["NAME"]).parent.mkdir(mode=0o700, parents=True, exist_ok=True)

# What the monitor itself reads from the environment.
MAX_RECORD_BYTES = _int("CLUSTERWATCH_MAX_RECORD_BYTES", 1024 * 1024)
RETENTION_DAYS = _int("CLUSTERWATCH_RETENTION_DAYS", 30)
REPORT_INTERVAL_S = _int("CLUSTERWATCH_REPORT_INTERVAL_S", 300)
MAX_CLOCK_SKEW_S = _int("CLUSTERWATCH_MAX_CLOCK_SKEW_S", 600)
ALARMS_CONFIG = Path(os.environ.get("CLUSTERWATCH_ALARMS_CONFIG") or DATA_DIR / "alarms.toml")

# Django's own body limit trips before the view sees the body; keep it just above ours so
# that every oversize body ends in the same 413 (see ingest/body.py).
DATA_UPLOAD_MAX_MEMORY_SIZE = MAX_RECORD_BYTES + 1

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "clusterwatch.monitor.core.apps.MonitorConfig",
    "clusterwatch.monitor.site.apps.SiteConfig",
    "clusterwatch.monitor.usage.apps.UsageConfig",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "clusterwatch.monitor.site.urls"
WSGI_APPLICATION = "clusterwatch.monitor.site.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        # The operators' pages are a feature, not an app: their templates are named here.
        "DIRS": [BASE_DIR.parent / "pages" / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "clusterwatch.monitor.site.navigation.navigation",
            ],
            # The queue page's rows, made in Python (`{% load queue_rows %}`).
            "libraries": {"queue_rows": "clusterwatch.monitor.pages.queue_rows"},
        },
    },
]

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

# Local accounts, and site accounts through LDAP when CLUSTERWATCH_LDAP_URI is set
# (AUTHENTICATION_BACKENDS and AUTH_LDAP_*; ldap_settings.py says which variables).
globals().update(ldap_settings.from_environ(os.environ))
# The end-of-job email: Django's EMAIL_* and USAGE_MAIL from CLUSTERWATCH_EMAIL_*.
globals().update(mail_settings.from_environ(os.environ))
LOGIN_URL = "/accounts/login/"
# The root: the usage reports' index when they are on, else the hosts page.
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/accounts/login/"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = DATA_DIR / "static"

SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = True
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
# Behind a TLS-terminating proxy that sets X-Forwarded-Proto.
if _flag("CLUSTERWATCH_BEHIND_TLS_PROXY"):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"stderr": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["stderr"], "level": "WARNING"},
    # Request bodies and headers are never logged: they carry host tokens.
    "loggers": {"django.request": {"handlers": ["stderr"], "level": "ERROR",
                                   "propagate": False}},
}
