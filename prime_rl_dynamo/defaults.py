"""Every default shared by the client, the admin pool, Prime-RL's knobs and the suite, defined once
(as httpx keeps its timeouts and limits in one module). Plain values: it imports nothing."""

from __future__ import annotations

__all__ = [
    "ADMIN_TIMEOUT",
    "API_KEY_VAR",
    "DISCOVERY_TIMEOUT",
    "MAX_BODY_BYTES",
    "NO_API_KEY",
    "POLL_INTERVAL",
    "REQUEST_TIMEOUT",
    "UPDATE_TIMEOUT",
]

#: Cap on a discovery body (POLL-3): about 30x the size of a 256-engine listing. The suite's
#: ``--max-body-bytes`` defaults to it too.
MAX_BODY_BYTES = 8 * 1024 * 1024
#: How long a wait for a ready fleet may take, seconds: the package's own default, and Prime-RL
#: 73164c322's ``client.wait_for_ready_timeout``. Prime-RL main's is 3600; its config reader
#: (``prime_rl_config.PRIME_RL_MAIN_WAIT_FOR_READY_TIMEOUT``) applies that to main's configs.
DISCOVERY_TIMEOUT = 1800.0
#: Deadline of one discovery GET, seconds.
REQUEST_TIMEOUT = 30.0
#: Pause between two polls, seconds.
POLL_INTERVAL = 1.0
#: Deadline of one admin call (health, pause, resume), seconds.
ADMIN_TIMEOUT = 300.0
#: Deadline of one weight update, seconds.
UPDATE_TIMEOUT = 720.0
#: The environment variable an API key is read from (Prime-RL's ``client.api_key_var``).
API_KEY_VAR = "VLLM_API_KEY"
#: The API key that means "no key": no Authorization header is sent (Prime-RL's convention).
NO_API_KEY = "EMPTY"
