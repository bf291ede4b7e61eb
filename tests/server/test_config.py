"""Settings: defaults, precedence (flags > env > TOML > defaults), tables and errors."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from server.process.config import (
    ConfigError,
    ServerConfig,
    build_parser,
    load_config,
    setting_names,
)
from server.process.settings import DEFAULT_TABLES

SECRET = "s3cret-s3cret-s3cret-s3cret-s3cret!"


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "chemmy.toml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_defaults() -> None:
    config = load_config([], {})
    assert config == ServerConfig()
    assert (config.host, config.port, config.db) == ("127.0.0.1", 8765, "chemmy.sqlite3")
    assert config.guest and not config.auth_enabled and not config.compression
    assert config.jwt_algorithm == "HS256" and config.jwt_secret is None
    assert (config.max_frame, config.rate_limit, config.rate_burst) == (65536, 20, 40)
    assert (config.chat_max_len, config.chat_rate) == (200, 5)
    assert (config.max_deposit, config.guest_balance) == (1_000_000, 100_000)
    assert (config.queue_size, config.grace, config.drain_timeout) == (256, 60, 30)
    assert (config.log_format, config.log_level) == ("auto", "info")
    assert config.origins == () and config.operator_players == ()
    assert [t["id"] for t in config.tables] == ["t1", "t2", "t3"]
    assert [t["tier"] for t in config.tables] == ["1-100", "10-1000", "100-10000"]
    assert config.tables == DEFAULT_TABLES
    assert config.config_file is None


def test_every_field_is_a_setting() -> None:
    names = {f.name for f in dataclasses.fields(ServerConfig)}
    assert names == {*setting_names(), "config_file"}


def test_env_over_file(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        f'host = "0.0.0.0"\nport = 9000\nguest = false\njwt_secret = "{SECRET}"\n'
        'origins = ["https://chemmy.example"]\nrate_limit = 5\n',
    )
    config = load_config([], {"CHEMMY_CONFIG": path, "CHEMMY_PORT": "9100"})
    assert config.host == "0.0.0.0"
    assert config.port == 9100
    assert config.guest is False and config.jwt_secret == SECRET
    assert config.origins == ("https://chemmy.example",)
    assert config.rate_limit == 5.0
    assert config.config_file == path


def test_flags_over_env(tmp_path: Path) -> None:
    path = write(tmp_path, "port = 9000\ncompression = true\n")
    environ = {
        "CHEMMY_PORT": "9100",
        "CHEMMY_GUEST": "no",
        "CHEMMY_JWT_SECRET": SECRET,
        "CHEMMY_ORIGINS": "https://a.example, https://b.example:8443,null",
        "CHEMMY_LOG_LEVEL": "DEBUG",
        "CHEMMY_GRACE": "2.5",
    }
    config = load_config(
        ["--config", path, "--port", "9200", "--guest", "--no-compression", "--origins", ""],
        environ,
    )
    assert config.port == 9200
    assert config.guest is True and config.compression is False
    assert config.origins == ()
    assert config.log_level == "debug" and config.grace == 2.5
    env_only = load_config(["--config", path], environ)
    assert env_only.origins == ("https://a.example", "https://b.example:8443", "null")
    assert env_only.port == 9100 and env_only.compression is True and not env_only.guest


def test_config_flag_over_config_env(tmp_path: Path) -> None:
    first = write(tmp_path, "port = 1")
    second = tmp_path / "other.toml"
    second.write_text("port = 2", encoding="utf-8")
    assert load_config(["--config", str(second)], {"CHEMMY_CONFIG": first}).port == 2


def test_toml_tables(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        [[tables]]
        id = "baccarat-1"
        name = "Salon Rose"
        decks = 8
        commission = false
        super6 = true
        tier = "5-500"
        seats = 7
        holder_must_bet_banker = true
        [tables.timers]
        betting = 20

        [[tables]]
        id = "high"
        min = 1000
        max = 100000
        tie_max = 10000
        side_max = 5000

        [[tables]]
        id = "yen"
        currency = "JPY"
        """,
    )
    config = load_config(["--config", path, "--wallet", "transfer"], {})
    assert len(config.tables) == 3
    first, second, yen = config.tables
    assert yen["currency"] == "JPY" and "currency" not in first
    assert first["id"] == "baccarat-1" and first["tier"] == "5-500"
    assert first["super6"] is True and first["timers"] == {"betting": 20}
    assert second == {"id": "high", "min": 1000, "max": 100000, "tie_max": 10000, "side_max": 5000}


@pytest.mark.parametrize(
    ("argv", "environ", "toml", "words"),
    [
        (["--port", "http"], {}, None, ["--port", "whole number"]),
        (["--port", "70000"], {}, None, ["--port", "65535"]),
        ([], {"CHEMMY_PORT": "-1"}, None, ["CHEMMY_PORT"]),
        ([], {"CHEMMY_GUEST": "maybe"}, None, ["CHEMMY_GUEST", "true or false"]),
        ([], {"CHEMMY_RATE_LIMIT": "nan"}, None, ["CHEMMY_RATE_LIMIT", "finite"]),
        (["--log-format", "xml"], {}, None, ["--log-format", "auto"]),
        (["--jwt-algorithm", "none"], {}, None, ["HS256"]),
        (["--origins", "https://a.example/"], {}, None, ["origin"]),
        (["--origins", "*"], {}, None, ["origin"]),
        (["--operator-players", "good,bad id"], {}, None, ["player id"]),
        (["--max-frame", "10"], {}, None, ["--max-frame"]),
        (["--queue-size", "0"], {}, None, ["--queue-size"]),
        (["--bogus"], {}, None, ["--bogus"]),
        (["--no-guest"], {}, None, ["nobody could play"]),
        (["--jwt-secret", "short"], {}, None, ["32 bytes"]),
        (["--jwt-algorithm", "EdDSA", "--jwt-secret", SECRET], {}, None, ["key file"]),
        (["--jwt-public-key-file", "/nonexistent.pem"], {}, None, ["EdDSA or RS256"]),
        (
            ["--jwt-algorithm", "RS256", "--jwt-public-key-file", "/nonexistent.pem"],
            {},
            None,
            ["no such file"],
        ),
        ([], {}, "port = 'x'", ["port", "whole number"]),
        ([], {}, "guest = 'yes'", ["guest", "true or false"]),
        ([], {}, "prot = 1", ["unknown setting 'prot'"]),
        ([], {}, "port = ", ["not valid TOML"]),
        ([], {}, "tables = []", ["tables"]),
        ([], {}, "[[tables]]\nname = 'x'", ["id"]),
        ([], {}, "[[tables]]\nid = 'a'\n[[tables]]\nid = 'a'", ["twice"]),
        ([], {}, "[[tables]]\nid = 'a'\ntier = '100-10'", ["tier"]),
        ([], {}, "[[tables]]\nid = 'a'\ntier = 'cheap'", ["tier"]),
        # One check of a table definition (issue 8, defect 3): what create_table and a
        # restore refuse, the config file refuses too, as a ConfigError naming it.
        ([], {}, "[[tables]]\nid = 'a'\ntier = '5-50'\nseats = 99", ["(a)", "seats", "1-16"]),
        ([], {}, "[[tables]]\nid = 'a'\ntier = '0-100'", ["tier"]),
        ([], {}, "[[tables]]\nid = 'a'\ntier = '100-100'", ["tier"]),
        ([], {}, "[[tables]]\nid = 'a'\ntier = 10", ["tier"]),
        ([], {}, "[[tables]]\nid = 'a'\ncommission = 0.05", ["commission", "true or false"]),
        ([], {}, "[[tables]]\nid = 'a'\ndecks = 7", ["decks"]),
        ([], {}, "[[tables]]\nid = 'a'\nstop_offset = 11", ["stop_offset", "12-100"]),
        ([], {}, "[[tables]]\nid = 'a'\nsuper6 = true", ["Super 6"]),
        ([], {}, "[[tables]]\nid = 'a'\nwheels = 2", ["unknown table setting", "wheels"]),
        ([], {}, "[[tables]]\nid = 'a'\nmin = 500\nmax = 400", ["at least the minimum"]),
        ([], {}, "[[tables]]\nid = 'a'\n[tables.timers]\nbetting = -1", ["betting"]),
        ([], {}, "[[tables]]\nid = 'a'\nname = ''", ["name"]),
        ([], {}, "[[tables]]\nid = 'a'\ncurrency = 'euro'", ["(a)", "currency", "ISO 4217"]),
        ([], {}, "[[tables]]\nid = 'a'\ncurrency = 'XYZ'", ["currency", "ISO 4217"]),
        ([], {}, "origins = [1]", ["origins", "list of strings"]),
        # Issue 34 §7: a currency table with Chemmy's own play money is refused at start.
        (
            [],
            {},
            "[[tables]]\nid = 'yen'\ncurrency = 'JPY'",
            ["'yen' is in JPY", "internal wallet", "play money", "transfer or seamless"],
        ),
    ],
)
def test_bad_values(
    tmp_path: Path, argv: list[str], environ: dict[str, str], toml: str | None, words: list[str]
) -> None:
    if toml is not None:
        argv = [*argv, "--config", write(tmp_path, toml)]
    with pytest.raises(ConfigError) as info:
        load_config(argv, environ)
    for word in words:
        assert word in str(info.value)


def test_missing_config_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_config([], {"CHEMMY_CONFIG": str(tmp_path / "nope.toml")})


def test_secret_never_echoed() -> None:
    secret = "tiny-but-secret"
    with pytest.raises(ConfigError) as info:
        load_config([], {"CHEMMY_JWT_SECRET": secret})
    assert secret not in str(info.value)
    config = load_config([], {"CHEMMY_JWT_SECRET": SECRET})
    assert SECRET not in repr(config)
    assert SECRET not in build_parser().format_help()


def test_help_mentions_every_setting() -> None:
    text = " ".join(build_parser().format_help().split())
    for name in setting_names():
        if name == "tables":
            assert "[[tables]]" in text
            continue
        assert "--" + name.replace("_", "-") in text, name
        assert "CHEMMY_" + name.upper() in text, name
    assert "--no-guest" in text and "--config" in text and "CHEMMY_CONFIG" in text
    assert "default: 8765" in text and "default: 127.0.0.1" in text


def test_help_exits_zero(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        load_config(["--help"], {})
    assert info.value.code == 0
    assert "chemmy-server" in capsys.readouterr().out


def test_a_bad_table_entry_is_a_config_error_and_exit_status_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A bad [[tables]] entry used to pass the config check and crash start-up with a
    traceback; now chemmy-server prints one line and exits with status 2."""
    from server.process.main import main

    path = write(tmp_path, "[[tables]]\nid = 'bad'\ntier = '5-50'\nseats = 99\n")
    assert main(["--config", path]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err.startswith("chemmy-server: error:") and "(bad)" in err and "seats" in err


def test_any_tier_of_whole_units_is_allowed(tmp_path: Path) -> None:
    """GAME_RULES §3 gives three tiers "for example": any N-M in whole units is a tier."""
    path = write(tmp_path, "[[tables]]\nid = 'a'\ntier = '5-50'\n")
    (table,) = load_config(["--config", path], {}).tables
    assert table == {"id": "a", "tier": "5-50"}
