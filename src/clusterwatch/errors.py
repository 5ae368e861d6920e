"""Exit statuses and the errors that map onto them, shared by every `clusterwatch` command."""

EXIT_OK = 0  # also when the run raised an alert
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_CONFIG = 78  # EX_CONFIG from sysexits.h: the configuration is wrong, not the run


class UsageError(Exception):
    """Bad arguments found after parsing (exit status 2)."""


class ConfigError(Exception):
    """Bad or unsafe configuration (exit status 78). The message must hold no secret."""


class RunError(Exception):
    """The run failed for a reason outside the configuration (exit status 1), such as a
    state file that cannot be written or a lock held too long. No secret in the message."""
