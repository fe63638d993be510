"""Probe package of lockstep's own package CI.

Built once per workflow run and installed by manifest on every test runner;
`lockstep-ci-probe` prints the version that was installed, so a job log shows
which build it tested.
"""

from importlib.metadata import version


def main() -> None:
    print(f"lockstep-ci-probe {version('lockstep-ci-probe')}")
