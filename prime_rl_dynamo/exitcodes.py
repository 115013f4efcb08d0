"""The exit codes of every ``prime-rl-dynamo`` command, in one place.

Each code means the same thing in every command, so a CI script can branch on it without knowing
which command ran.
"""

from __future__ import annotations

import enum

__all__ = ["ExitCode"]


class ExitCode(enum.IntEnum):
    """What a command's exit status says."""

    #: Done: valid, conformant, ready, no breaking change.
    OK = 0
    #: The judged thing failed: invalid body, not conformant, refused, breaking change.
    FAIL = 1
    #: The command could not run as asked: bad options or input files (said on stderr).
    USAGE = 2
    #: Nothing could be judged: the target did not answer as an RL listener, or the run erred.
    INCONCLUSIVE = 3
    #: The run concluded nothing: every check skipped, or none selected.
    NOTHING_CHECKED = 4
    #: Interrupted (SIGINT), as a shell reports it.
    INTERRUPTED = 130
    #: A reader closed the pipe early (``... | head``), as a shell reports SIGPIPE.
    PIPE = 141
