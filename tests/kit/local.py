"""A Chemmy cluster on this machine, without Docker: what ``scripts/cluster`` runs.

:class:`LocalCluster` starts, all in one folder:

- ``redis-server`` with ``deploy/redis.conf`` (AOF, ``appendfsync always``) on a free
  loopback port, never 6379: it never touches a Redis it did not start;
- ``processes`` ``chemmy-server`` processes sharing the tables through it
  (``--store redis://...``), each on a port of its own (``--port 0``: the port each
  prints in its listening line, read by the kit's launcher, :mod:`.launch`);
- nginx (Debian package ``nginx``, :class:`Nginx`) with ``deploy/nginx/chemmy.conf`` in
  front of them, TLS with a throwaway certificate made here (a small CA and a
  certificate for 127.0.0.1 and localhost, signed by it);

and :meth:`LocalCluster.stop` stops them in order: nginx, then the servers (each
drains), then Redis.

The nginx config is deploy/'s own with the listening ports, the certificate paths and
the upstream servers substituted, nothing else (:func:`render_site`,
:func:`render_upstream`); the deploy tests start nginx through the same :class:`Nginx`,
so what the tests run is what the script runs.

Every child is started with the kit's launcher (:class:`Child`, a
:class:`~.launch.Process`; Redis and the sentinels with the kit's one Redis launcher,
:mod:`.redis`, on that), in a session of its own and sent SIGTERM if the parent dies
(Linux), so nothing started here outlives it; nothing here kills a process it did not
start. The timeouts are the caller's (the script's own, unscaled; the deploy tests pass
scaled ones).
"""

from __future__ import annotations

import contextlib
import datetime
import ipaddress
import os
import re
import shutil
import signal
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from .launch import ROOT, SERVER_LISTENING, Process
from .redis import RedisServer, Sentinel, free_port, redis_available

__all__ = [
    "ClusterError",
    "LocalCluster",
    "Nginx",
    "client_tls",
    "free_port",
    "http_status",
    "make_tls",
    "nginx_main",
    "render_site",
    "render_upstream",
]

DEPLOY = ROOT / "deploy"
SITE = DEPLOY / "nginx" / "chemmy.conf"
UPSTREAM = DEPLOY / "nginx" / "chemmy-upstream.conf"
REDIS_CONF = DEPLOY / "redis.conf"
SENTINEL_CONF = DEPLOY / "sentinel.conf"


class ClusterError(Exception):
    """The cluster could not start: what failed, and where its log is."""


# -- TLS --------------------------------------------------------------------------------
def make_tls(folder: Path) -> tuple[Path, Path, Path]:
    """A throwaway CA and a certificate for 127.0.0.1 and localhost signed by it, valid
    for 30 days: ``(ca.pem, chemmy.pem, chemmy.key)`` in ``folder``. Clients trust
    ``ca.pem`` (Python: ``SSL_CERT_FILE``); nginx serves ``chemmy.pem`` and its key."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    folder.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)
    start, end = now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=30)

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "chemmy throwaway CA")])
    ca_ski = x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key())
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=False, content_commitment=False, key_encipherment=False,
                data_encipherment=False, key_agreement=False, key_cert_sign=True,
                crl_sign=True, encipher_only=False, decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(ca_ski, critical=False)
        .sign(ca_key, hashes.SHA256())
    )  # fmt: skip

    key = ec.generate_private_key(ec.SECP256R1())
    names = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski),
            critical=False,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )

    pem = serialization.Encoding.PEM
    ca_path, cert_path, key_path = folder / "ca.pem", folder / "chemmy.pem", folder / "chemmy.key"
    ca_path.write_bytes(ca.public_bytes(pem))
    cert_path.write_bytes(cert.public_bytes(pem))
    key_path.write_bytes(
        key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    key_path.chmod(0o600)
    return ca_path, cert_path, key_path


def client_tls(ca: Path) -> ssl.SSLContext:
    """What a client of the cluster verifies nginx's certificate with."""
    return ssl.create_default_context(cafile=str(ca))


# -- nginx config -----------------------------------------------------------------------
def _substitute(text: str, pattern: str, replacement: str, what: str) -> str:
    new, count = re.subn(pattern, replacement, text, flags=re.MULTILINE)
    if count != 1:
        raise ClusterError(f"deploy/nginx/chemmy.conf: expected one {what}, found {count}")
    return new


def render_site(
    text: str, *, https_port: int, http_port: int, cert: Path, key: Path, host: str = "127.0.0.1"
) -> str:
    """deploy/nginx/chemmy.conf with its two ``listen`` lines on ``host`` and the given
    ports, and its certificate paths replaced; every other line as it is."""
    text = _substitute(
        text, r"^(\s*)listen\s+443\s+ssl;", rf"\1listen {host}:{https_port} ssl;", "listen 443"
    )
    text = _substitute(text, r"^(\s*)listen\s+80;", rf"\1listen {host}:{http_port};", "listen 80")
    text = _substitute(text, r"^(\s*ssl_certificate\s+)\S+;", rf"\g<1>{cert};", "ssl_certificate")
    return _substitute(
        text, r"^(\s*ssl_certificate_key\s+)\S+;", rf"\g<1>{key};", "ssl_certificate_key"
    )


_SERVER_LINE = re.compile(r"^(?P<indent>\s*)server\s+(?P<addr>\S+?)(?P<options>(\s+[^;\s]+)*);\s*$")


def render_upstream(text: str, addresses: Sequence[str]) -> str:
    """deploy/nginx/chemmy-upstream.conf with the ``server`` lines of each of its
    ``upstream`` blocks (the lobby's, ``least_conn``, and the tables', by a hash of the
    table) replaced by one per address (``127.0.0.1:PORT``), each with the options the
    block's first line had."""
    lines = text.splitlines()
    runs: list[list[int]] = []  # each block's server lines, consecutive
    for i, line in enumerate(lines):
        if _SERVER_LINE.match(line):
            if runs and runs[-1][-1] == i - 1:
                runs[-1].append(i)
            else:
                runs.append([i])
    blocks = sum(1 for line in lines if re.match(r"^\s*upstream\s+\S+\s*\{", line))
    if not runs or len(runs) != blocks:
        raise ClusterError(
            "deploy/nginx/chemmy-upstream.conf: expected one block of server lines an upstream"
        )
    out: list[str] = []
    done = 0
    for run in runs:
        first = _SERVER_LINE.match(lines[run[0]])
        assert first is not None
        out += lines[done : run[0]]
        out += [f"{first['indent']}server {a}{first['options']};" for a in addresses]
        done = run[-1] + 1
    return "\n".join([*out, *lines[done:]]) + "\n"


def nginx_main(folder: Path) -> str:
    """The main nginx.conf around the two includes: what Debian's /etc/nginx/nginx.conf
    would be, with every file of nginx's own in ``folder``."""
    user = "user root;\n" if os.geteuid() == 0 else ""
    temps = "".join(
        f"    {kind}_temp_path {folder / 'temp' / kind};\n"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    return (
        f"{user}daemon off;\n"
        "worker_processes 1;\n"
        f"pid {folder / 'nginx.pid'};\n"
        f"error_log {folder / 'error.log'} info;\n"
        "events { worker_connections 1024; }\n"
        "http {\n"
        f"    access_log {folder / 'access.log'};\n"
        f"{temps}"
        f"    include {folder / 'chemmy-upstream.conf'};\n"
        f"    include {folder / 'chemmy.conf'};\n"
        "}\n"
    )


# -- child processes --------------------------------------------------------------------
class Child(Process):
    """A process started here, with the kit's launcher (:class:`~.launch.Process`): its
    output (stdout and stderr) in the file ``log`` and in memory, in a session of its own
    (Ctrl-C reaches only the script, which stops it in order), sent SIGTERM if this
    process dies. Started at once; ``ready``: the line it says once ready (waited for up
    to ``timeout``), or None (the caller checks)."""

    def __init__(
        self,
        name: str,
        args: Sequence[str],
        log: Path,
        env: Mapping[str, str],
        *,
        ready: re.Pattern[str] | None = None,
        timeout: float = 30.0,
    ) -> None:
        super().__init__(
            args, ready=ready, base_env=env, log_file=log, merge_stdout=True, own_session=True
        )
        self.name = name
        try:
            self.start(timeout)
        except AssertionError as exc:  # it exited, or said nothing in time
            raise ClusterError(f"{name}: {exc}") from None

    @property
    def returncode(self) -> int | None:
        return None if self.proc is None else self.proc.returncode

    def tail(self, lines: int = 20) -> str:
        return self.log_text(lines)

    def stop(self, sig: int | None = signal.SIGTERM, timeout: float | None = 40.0) -> int | None:  # type: ignore[override]
        """Signal it (``sig`` None: it was signalled already; a second SIGTERM could
        find a server past its handlers) and wait: its exit status, or None if it was
        still there after ``timeout`` and had to be killed (SIGKILL)."""
        if sig is not None and self.running:
            self.send_signal(sig)
        try:
            return self.wait_exit(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return None


def _wait(what: str, check: Callable[[], bool], timeout: float, child: Child) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if not child.running:
            raise ClusterError(f"{what} exited ({child.returncode}):\n{child.tail()}")
        if check():
            return
        time.sleep(0.05)
    raise ClusterError(f"{what} did not come up in {timeout:.0f} s:\n{child.tail()}")


def http_status(url: str, tls: ssl.SSLContext | None = None, timeout: float = 5.0) -> int:
    """The status of a GET (0 when nothing answers)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout, context=tls) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        exc.close()
        return int(exc.code)
    except (OSError, urllib.error.URLError):
        return 0


class Nginx:
    """nginx with deploy/'s config in front of ``addresses`` (``HOST:PORT`` of each
    chemmy-server), every file of its own in ``folder``: a throwaway certificate
    (``tls/``), the rendered config, its logs. ``https_port`` / ``http_port`` 0: free
    ports are picked (again, if another process takes one first)."""

    def __init__(
        self,
        folder: Path,
        addresses: Sequence[str],
        *,
        https_port: int = 0,
        http_port: int = 0,
        timeout: float = 30.0,
    ) -> None:
        self.folder = folder
        self.addresses = list(addresses)
        self.https_port = https_port
        self.http_port = http_port
        self.timeout = timeout
        self.child: Child | None = None
        self.ca = folder / "tls" / "ca.pem"

    @property
    def tls(self) -> ssl.SSLContext:
        """A client context that trusts this nginx's certificate."""
        return client_tls(self.ca)

    @property
    def error_log(self) -> str:
        with contextlib.suppress(OSError):
            return (self.folder / "error.log").read_text(errors="replace")
        return ""

    def start(self) -> None:
        program = shutil.which("nginx") or next(
            (p for p in ("/usr/sbin/nginx",) if Path(p).exists()), None
        )
        if program is None:
            raise ClusterError("nginx is not installed (Debian: apt-get install nginx)")
        conf = self.folder
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"):
            (conf / "temp" / kind).mkdir(parents=True, exist_ok=True)
        _ca, cert, key = make_tls(conf / "tls")
        (conf / "chemmy-upstream.conf").write_text(
            render_upstream(UPSTREAM.read_text(), self.addresses)
        )
        (conf / "nginx.conf").write_text(nginx_main(conf))
        tls = self.tls
        pick = self.https_port == 0
        for _attempt in range(10 if pick else 1):
            https_port = free_port() if pick else self.https_port
            http_port = free_port() if pick or self.http_port == 0 else self.http_port
            site = render_site(
                SITE.read_text(), https_port=https_port, http_port=http_port, cert=cert, key=key
            )
            (conf / "chemmy.conf").write_text(site)
            child = Child(
                "nginx",
                [program, "-p", str(conf), "-c", str(conf / "nginx.conf"), "-e",
                 str(conf / "error.log")],
                conf / "nginx.out",
                dict(os.environ),
            )  # fmt: skip
            url = f"https://127.0.0.1:{https_port}/healthz"

            def healthy(url: str = url) -> bool:
                return http_status(url, tls, 1) == 200

            try:
                _wait("nginx", healthy, self.timeout, child)
            except ClusterError as exc:
                child.stop(signal.SIGKILL)
                if not pick:
                    raise ClusterError(f"{exc}\n{self.error_log[-2000:]}") from None
                continue
            self.child, self.https_port, self.http_port = child, https_port, http_port
            return
        raise ClusterError(f"nginx did not start; see {conf / 'error.log'}")

    def stop_status(self) -> int | None:
        """Graceful stop (SIGQUIT: replies under way finish): the exit status, or None
        if it had to be killed."""
        child, self.child = self.child, None
        return 0 if child is None else child.stop(signal.SIGQUIT, 10)

    def stop(self) -> bool:
        return self.stop_status() == 0


class LocalCluster:
    """Redis, ``processes`` chemmy-servers and nginx in ``folder``."""

    def __init__(
        self,
        folder: Path,
        *,
        processes: int = 3,
        https_port: int = 8443,
        http_port: int = 8080,
        server_args: Sequence[str] = (),
        timeout: float = 30.0,
        stop_timeout: float = 40.0,
        ha: bool = False,
    ) -> None:
        self.folder = folder
        self.stop_timeout = stop_timeout
        #: Redis with automatic failover: a replica and three sentinels too, the servers
        #: on ``redis+sentinel://`` (``scripts/cluster --ha``).
        self.ha = ha
        self.replica: RedisServer | None = None
        self.sentinels: list[Sentinel] = []
        self.sentinel_ports: list[int] = []
        self.processes = processes
        self.https_port = https_port
        self.http_port = http_port
        self.server_args = list(server_args)
        self.timeout = timeout
        self.redis: RedisServer | None = None
        self.redis_port = 0
        self.servers: list[Child] = []
        self.server_ports: list[int] = []
        self.nginx: Nginx | None = None
        self.env = {k: v for k, v in os.environ.items() if k != "CHEMMY_STORE"}
        self.env["PYTHONPATH"] = os.pathsep.join(
            [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
        )

    @property
    def store(self) -> str:
        if self.ha:
            hosts = ",".join(f"127.0.0.1:{port}" for port in self.sentinel_ports)
            return f"redis+sentinel://{hosts}/chemmy/0"
        return f"redis://127.0.0.1:{self.redis_port}/0"

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.https_port}/"

    def start(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        try:
            self._start_redis()
            if self.ha:
                self._start_replica()
                for n in range(1, 4):
                    self._start_sentinel(n)
            for n in range(1, self.processes + 1):
                self._start_server(n)
            self._start_nginx()
        except BaseException:
            self.stop()
            raise

    def _start_redis(self) -> None:
        self.redis = self._redis("redis", self.folder / "redis")
        self.redis_port = self.redis.port

    def _redis(self, name: str, data: Path, extra: Sequence[str] = ()) -> RedisServer:
        """A data server on deploy/redis.conf, or with ``ha`` a copy of it in ``data``
        (the sentinels make a data server rewrite its config file, ``CONFIG REWRITE``,
        when they promote or demote it, and deploy/'s own must stay as it is); started
        with the kit's one Redis launcher (:mod:`.redis`)."""
        if not redis_available():
            raise ClusterError(
                "redis-server is not installed (Debian: apt-get install redis-server)"
            )
        data.mkdir(parents=True, exist_ok=True)
        config = REDIS_CONF
        if self.ha:
            config = data / "redis.conf"
            shutil.copyfile(REDIS_CONF, config)
        server = RedisServer(
            data, config=config, extra=extra, name=name, env=self.env, own_session=True,
            timeout=self.timeout,
        )  # fmt: skip
        try:
            server.start()
        except RuntimeError as exc:
            raise ClusterError(str(exc)) from None
        return server

    def _start_replica(self) -> None:
        """A replica of the primary (deploy/redis.conf's settings; a replica cut from
        its primary answers MASTERDOWN, not old data)."""
        extra = ["--replicaof", "127.0.0.1", str(self.redis_port)]
        extra += ["--replica-serve-stale-data", "no"]
        self.replica = self._redis("redis-replica", self.folder / "redis-replica", extra)

    def _start_sentinel(self, n: int) -> None:
        """A sentinel on deploy/sentinel.conf, monitoring the primary on loopback (its
        config file a copy of its own: a sentinel rewrites it)."""
        sentinel = Sentinel(
            self.folder / f"sentinel-{n}", self.redis_port, template=SENTINEL_CONF.read_text(),
            name=f"sentinel-{n}", env=self.env, own_session=True, timeout=self.timeout,
        )  # fmt: skip
        try:
            sentinel.start()
        except RuntimeError as exc:
            raise ClusterError(str(exc)) from None
        self.sentinels.append(sentinel)
        self.sentinel_ports.append(sentinel.port)

    def _start_server(self, n: int) -> None:
        child = Child(
            f"chemmy-{n}",
            [sys.executable, "-m", "server.process.main", "--host", "127.0.0.1", "--port", "0",
             "--store", self.store, "--log-format", "json", *self.server_args],
            self.folder / f"chemmy-{n}.log",
            self.env,
            ready=SERVER_LISTENING,
            timeout=self.timeout,
        )  # fmt: skip
        self.servers.append(child)
        self.server_ports.append(child.port)

    def _start_nginx(self) -> None:
        addresses = [f"127.0.0.1:{port}" for port in self.server_ports]
        nginx = Nginx(
            self.folder / "nginx",
            addresses,
            https_port=self.https_port,
            http_port=self.http_port,
            timeout=self.timeout,
        )
        nginx.start()
        self.nginx, self.https_port, self.http_port = nginx, nginx.https_port, nginx.http_port

    def stop(self) -> bool:
        """Stop everything this started, in order, saying how each ended; whether every
        one exited by itself with status 0."""
        clean = True
        if self.nginx is not None:
            clean &= _report("nginx", self.nginx.stop_status())
            self.nginx = None
        for child in self.servers:  # all drain at once: none is handed the others' tables
            if child.running:
                child.send_signal(signal.SIGTERM)
        for child in self.servers:
            clean &= _report(child.name, child.stop(None, self.stop_timeout))
        self.servers = []
        for sentinel in self.sentinels:
            clean &= _report(sentinel.name, sentinel.stop())
        self.sentinels = []
        if self.replica is not None:
            clean &= _report("redis-replica", self.replica.stop())
            self.replica = None
        if self.redis is not None:
            clean &= _report("redis", self.redis.stop())
            self.redis = None
        return clean

    def describe(self) -> str:
        assert self.nginx is not None
        ca = self.nginx.ca
        ports = ", ".join(str(p) for p in self.server_ports)
        return "\n".join(
            [
                f"chemmy cluster ready: {self.url}",
                f"  processes: {len(self.server_ports)} chemmy-server on 127.0.0.1 ports {ports}",
                f"  store:     {self.store}",
                *(
                    [
                        f"  redis:     primary 127.0.0.1:{self.redis_port}, a replica, three "
                        "sentinels (kill the primary: a replica is promoted, play goes on)"
                    ]
                    if self.ha
                    else []
                ),
                f"  play:      SSL_CERT_FILE={ca} chemmy play --guest"
                f" --url wss://127.0.0.1:{self.https_port}/",
                f"  page:      {self.url} (trust {ca} or accept the warning)",
                f"  metrics:   http://127.0.0.1:{self.server_ports[0]}/metrics (each process's)",
                f"  logs:      {self.folder}/",
                "Ctrl-C stops nginx, drains the servers and stops Redis.",
            ]
        )


def _report(name: str, code: int | None) -> bool:
    """Say how a child ended; whether it exited by itself with status 0."""
    if code is None:
        print(f"scripts/cluster: {name} killed: still running after SIGTERM", file=sys.stderr)
    else:
        print(f"scripts/cluster: {name} exited with status {code}", file=sys.stderr)
    return code == 0
