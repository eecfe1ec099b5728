"""Settings: defaults, validation with clear messages, and the README table listing every variable."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from engram.config import ConfigError, Settings, did_web_for, read_env, read_env_with
from engram.config_fields import Variable
from engram.config_variables import VARIABLES

ROOT = Path(__file__).resolve().parents[2]


def test_defaults_are_the_embedded_ones():
    s = read_env({})
    assert (s.host, s.port) == ("127.0.0.1", 8080)
    assert s.data_dir == Path("./engram-data")
    assert s.public_url == "http://localhost:8080"
    assert s.service_did == "did:web:localhost%3A8080"
    assert s.embedder == "builtin,multilingual"


def test_service_did_follows_the_public_url():
    assert did_web_for("https://engram.example.com") == "did:web:engram.example.com"
    assert (
        read_env({"ENGRAM_PUBLIC_URL": "https://a.example:8443/"}).service_did == "did:web:a.example%3A8443"
    )


@pytest.mark.parametrize(
    "env,needle",
    [
        ({"ENGRAM_PORT": "eighty"}, "ENGRAM_PORT"),
        ({"ENGRAM_PORT": "70000"}, "ENGRAM_PORT"),
        ({"ENGRAM_SERVICE_DID": "web:nope"}, "ENGRAM_SERVICE_DID"),
        ({"ENGRAM_PUBLIC_URL": "ftp://x"}, "ENGRAM_PUBLIC_URL"),
        ({"ENGRAM_DEV": "maybe"}, "ENGRAM_DEV"),
        ({"ENGRAM_LOG_LEVEL": "loud"}, "ENGRAM_LOG_LEVEL"),
        ({"ENGRAM_EMBEDDER": "cloud:x"}, "ENGRAM_EMBEDDER"),
        ({"ENGRAM_ADMIN_DIDS": "did:plc:ok,notadid"}, "ENGRAM_ADMIN_DIDS"),
        ({"ENGRAM_SIGNING_KEY": "abcd"}, "ENGRAM_SIGNING_KEY"),
        ({"ENGRAM_TYPO": "1"}, "ENGRAM_TYPO"),
        ({"ENGRAM_EVENT_LOOP": "tokio"}, "ENGRAM_EVENT_LOOP"),
    ],
)
def test_bad_values_are_refused_naming_the_variable(env, needle):
    with pytest.raises(ConfigError, match=needle):
        read_env(env)


def test_bad_config_stops_the_cli_with_a_clear_message(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "engram", "serve"],
        env={"ENGRAM_PORT": "not-a-port", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
        cwd=tmp_path,
    )
    assert proc.returncode == 2
    assert "ENGRAM_PORT" in proc.stderr and "Traceback" not in proc.stderr


def _readme_row(v: Variable) -> str:
    default = "(unset)" if v.default is None else "(empty)" if v.default == "" else f"`{v.default}`"
    return f"| `{v.name}` | {default} | {v.help} |"


def test_readme_configuration_table_is_the_one_config_py_describes():
    """Names, defaults and meanings, in order: the table is VARIABLES rendered (on failure, paste the
    expected rows printed below into README.md)."""
    readme = (ROOT / "README.md").read_text()
    documented = re.findall(r"^\| `ENGRAM_[A-Z0-9_]+` \|.*$", readme, flags=re.MULTILINE)
    expected = [_readme_row(v) for v in VARIABLES]
    assert documented == expected, "README.md's configuration table should read:\n" + "\n".join(expected)


def test_the_documented_defaults_are_the_defaults():
    """read_env falls back to VARIABLES' defaults (the README's); Settings() is what tests and the CLI's
    overrides start from: both are the same settings."""
    assert read_env({}) == Settings()


def test_config_module_is_the_only_reader_of_engram_settings():
    """ENGRAM_* variables are read in engram/config.py only (other variables, such as XDG_CONFIG_HOME for
    the CLI's client key, are not service settings)."""
    offenders = []
    for path in (ROOT / "engram").rglob("*.py"):
        if path.name == "config.py" and path.parent.name == "engram":
            continue
        if re.search(r"(os\.environ|os\.getenv|environ\.get)[^\n]*ENGRAM_", path.read_text()):
            offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []


def test_command_line_flags_are_applied_before_the_url_and_did_are_derived():
    settings = read_env_with({"ENGRAM_PORT": "9000"}, environ={})
    assert (settings.port, settings.public_url, settings.service_did) == (
        9000,
        "http://localhost:9000",
        "did:web:localhost%3A9000",
    )
    explicit = {"ENGRAM_PUBLIC_URL": "https://engram.example", "ENGRAM_SERVICE_DID": "did:web:engram.example"}
    settings = read_env_with({"ENGRAM_PORT": "9000"}, environ=explicit)
    assert (settings.port, settings.public_url, settings.service_did) == (
        9000,
        "https://engram.example",
        "did:web:engram.example",
    )


def test_processes_default_to_the_cores_this_process_may_use():
    assert read_env({}).processes == len(os.sched_getaffinity(0))
    assert read_env({"ENGRAM_PROCESSES": "3"}).processes == 3
    with pytest.raises(ConfigError, match="ENGRAM_PROCESSES"):
        read_env({"ENGRAM_PROCESSES": "0"})


def test_event_loop_defaults_to_uvloop_where_installed():
    assert read_env({}).event_loop == "uvloop"  # a dependency on Linux, where the suite runs
    assert read_env({"ENGRAM_EVENT_LOOP": "asyncio"}).event_loop == "asyncio"
    assert read_env({"ENGRAM_EVENT_LOOP": " UVLOOP "}).event_loop == "uvloop"


def test_each_variable_is_declared_once_by_its_settings_field():
    """One declaration per variable: the field's default is the parsed README default, and read_env parses
    it with the same row (a variable without a parser is one read_env derives from others)."""
    from dataclasses import fields

    declared = [f for f in fields(Settings) if "variable" in f.metadata]
    assert [f.metadata["variable"] for f in declared] == list(VARIABLES)
    assert len({v.name for v in VARIABLES}) == len(VARIABLES)
    for f in declared:
        v = f.metadata["variable"]
        if v.parse is not None and v.default is not None:
            assert getattr(Settings(), f.name) == v.parse(v.name, v.default), v.name
    derived = {v.name for v in VARIABLES if v.parse is None}
    assert derived == {"ENGRAM_PUBLIC_URL", "ENGRAM_SERVICE_DID", "ENGRAM_NODE_ID", "ENGRAM_PROCESSES"}


def test_sections_are_views_of_the_declared_fields():
    from dataclasses import fields

    from engram.config import SECTIONS

    settings = read_env({"ENGRAM_EXACT_MAX": "7", "ENGRAM_MCP_SESSIONS": "3", "ENGRAM_HEARTBEAT_MS": "100"})
    names = {f.name for f in fields(Settings)}
    for section in SECTIONS:
        assert {f.name for f in fields(section)} <= names, section
    assert settings.search.exact_max == 7
    assert settings.mcp.mcp_sessions == 3
    assert settings.node.heartbeat_ms == 100
    with pytest.raises(AttributeError):
        settings.search.exact_max = 8  # frozen
