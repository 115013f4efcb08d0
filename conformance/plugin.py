"""pytest plugin of the conformance suite (options --rl-url, --rl-profile, --rl-strict)."""
