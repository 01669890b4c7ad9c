"""`quarry sync`, `quarry serve`, `quarry up` and `quarry demo start`: running the service.

`sync` runs Dagster's sync jobs in this process on the instance of DAGSTER_HOME (the runs
show in the UI; no daemon needed). `up` runs the API, Quarry's code server and, once that
serves, the Dagster webserver and the daemon as child processes in the foreground, each in
its own process group, and stops them all on Ctrl-C or SIGTERM: SIGTERM to every group, up
to STOP_GRACE_SECONDS to go, then SIGKILL (the webserver ignores SIGTERM for a while). When
one child dies the others are stopped and `up` exits non-zero.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType

import click
import yaml

from cli.context import AppContext, echo_json, pass_app
from cli.readiness import Announcement, accepts, check_ports_free, socket_path
from quarry.errors import ConfigurationError
from quarry.logs import dagster_options, level_of, uvicorn_log_config
from quarry.settings import Settings
from registry.accounts import list_stores
from registry.db import Registry

STOP_GRACE_SECONDS = 10.0
PORTS_HINT = "stop what uses it, or choose others (`quarry up --port ... --dagster-port ...`)"
DEMO_PORTS_HINT = "stop what uses it, or choose others: `make demo PORT=8080 DAGSTER_PORT=3080`"
PROJECT_ROOT = Path(__file__).resolve().parents[1]
LOCATION = "quarry"  # the code location's name (pipelines.exports.launcher submits runs to it)
GRPC_HEADER = (
    "# Written by `quarry up` / `quarry orchestrator`: the code server of the worker role.\n"
)
CODE_SERVER = "code-server"  # the worker role's process in `up` (unless a worker host has it)
# How long `up` waits for its code server to load the code before starting the others.
CODE_SERVER_START_SECONDS = 300.0


@click.command()
@click.option("--store", "store_ids", multiple=True, help="Only this store (repeatable).")
@click.option("--full", is_flag=True, help="Re-sync from the beginning, ignoring cursors.")
@click.option(
    "--on-worker",
    is_flag=True,
    help="Submit the runs to Dagster (QUARRY_DAGSTER_URL) to execute in the worker role, "
    "instead of in this process.",
)
@click.option("--json", "as_json", is_flag=True, help="Print every run's result as one JSON array.")
@pass_app
def sync(
    app: AppContext, store_ids: tuple[str, ...], full: bool, on_worker: bool, as_json: bool
) -> None:
    """Sync every store of every account (or the given ones) now, and wait.

    Progress goes to stderr as each store and dataset is written; each store's result
    goes to stdout."""
    chosen = list(store_ids) or None
    ok = _sync_and_report(
        app.settings, app.registry, chosen, full=full, on_worker=on_worker, as_json=as_json
    )
    if not ok:
        sys.exit(1)


def _sync_and_report(
    settings: Settings,
    registry: Registry,
    store_ids: list[str] | None,
    *,
    full: bool,
    on_worker: bool = False,
    as_json: bool = False,
) -> bool:
    """Run the syncs, reporting as they go (cli.sync_report); True when every run
    succeeded."""
    from cli.sync_report import SyncReport
    from pipelines.runner import sync_stores, sync_stores_on_worker
    from warehouse.lake import refuse_delta_home

    refuse_delta_home(settings)

    report = SyncReport(as_json=as_json)
    run_syncs = sync_stores_on_worker if on_worker else sync_stores
    outcomes = run_syncs(settings, registry, store_ids, full=full, report=report)
    if as_json:
        echo_json(report.results())
    if any(o.interrupted for o in outcomes):
        sys.exit(130)
    return all(o.success for o in outcomes)


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, show_default=True, type=int)
@click.option("--workers", default=1, show_default=True, type=int)
@pass_app
def serve(app: AppContext, host: str, port: int, workers: int) -> None:
    """Run the API alone under uvicorn."""
    import uvicorn

    from api.connections import PROTOCOL
    from warehouse.lake import refuse_delta_home

    app.settings.ensure_home()
    refuse_delta_home(app.settings)
    # An import string, so workers are spawned and import the app themselves: DuckDB must
    # not be used in a forked child. The protocol closes slow clients' connections
    # (QUARRY_HEADER_TIMEOUT_SECONDS, QUARRY_BODY_TIMEOUT_SECONDS); the app serves no
    # WebSocket, so upgrade requests are plain HTTP requests. uvicorn's logs follow
    # QUARRY_LOG_FORMAT and QUARRY_LOG_LEVEL from its first line, in every process.
    uvicorn.run(
        "api.main:create_app",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        http=PROTOCOL,
        ws="none",
        log_config=uvicorn_log_config(app.settings),
    )


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address of both.")
@click.option("--port", default=8000, show_default=True, type=int, help="API port.")
@click.option("--dagster-port", default=3000, show_default=True, type=int)
@pass_app
def up(app: AppContext, host: str, port: int, dagster_port: int) -> None:
    """Run every role on this machine: the API, Dagster's UI and daemon, the housekeeper,
    and the code server that executes runs, until Ctrl-C."""
    sys.exit(run_services(app.settings, host=host, port=port, dagster_port=dagster_port))


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address of the UI.")
@click.option("--port", default=3000, show_default=True, type=int, help="Dagster UI port.")
@pass_app
def orchestrator(app: AppContext, host: str, port: int) -> None:
    """Run the orchestrator role: Dagster's webserver and daemon and Quarry's housekeeper,
    until Ctrl-C. Runs execute in the worker at QUARRY_WORKER_ADDRESS (or, unset, in Quarry's
    code server, which this command starts on this machine first)."""
    settings = app.settings
    gates, commands = _orchestrator_commands(settings, host, port)
    click.echo(f"Dagster UI on http://{host}:{port}; code location at {_location(settings)}")
    sys.exit(_supervise(settings, commands, gates=gates))


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=4000, show_default=True, type=int)
@pass_app
def worker(app: AppContext, host: str, port: int) -> None:
    """Run the worker role: the Dagster code server of Quarry's pipelines, whose processes
    execute the runs the orchestrator launches, until Ctrl-C.

    The code server replaces this process (exec) rather than running under a supervisor
    in a session of its own: the worker's process group is then the code server's and
    every run's, so stopping the group (a service manager, `kill -- -PGID`, Ctrl-C) stops
    the runs too (docs/deployment.md)."""
    from quarry.files import staging_dir

    settings = app.settings
    settings.ensure_home()
    # Files that runs of an earlier worker of this home were staging: no run of theirs can
    # still be going (one worker per home), so nothing half-written outlives a restart.
    shutil.rmtree(staging_dir(settings), ignore_errors=True)
    command = _code_server_command(settings, "-h", host, "-p", str(port))
    click.echo(f"worker {settings.role_id}: code server on {host}:{port}")
    env = _role_env(settings)
    sys.stdout.flush()
    sys.stderr.flush()
    os.chdir(PROJECT_ROOT)
    os.execvpe(command[0], command, env)


def _code_server_command(settings: Settings, *address: str) -> list[str]:
    """Quarry's code server (pipelines.code_server: Dagster's, with runs forked from a
    process that loaded the code already) serving the code location at `address` (options
    of `dagster api grpc`: `-h HOST -p PORT` or `--socket PATH`)."""
    from pipelines import code_server

    options = [*address, *dagster_options(settings, "code-server")]
    return code_server.command("pipelines.definitions", "defs", LOCATION, *options)


def code_server_socket(settings: Settings) -> Path:
    """The Unix socket of the code server `up` and `orchestrator` start on this machine: in
    DAGSTER_HOME, or in the temporary folder when that path is too long for a socket."""
    return socket_path(settings.resolved_dagster_home / "code-server.sock")


@click.command(name="fleet-worker")
@click.option(
    "--concurrency", default=0, type=int, help="Steps at once (0: one per CPU of this host)."
)
@click.option("--name", "node", default=None, help="Celery node name (default: the role id).")
@pass_app
def fleet_worker(app: AppContext, concurrency: int, node: str | None) -> None:
    """Run a Celery worker that executes fleet runs' steps (QUARRY_FLEET_EXECUTOR=celery),
    taken from Redis (QUARRY_REDIS_URL), until stopped. Start one on every worker host."""
    from pipelines.fleet.celery_app import fleet_app
    from pipelines.instance import role_environment

    settings = app.settings
    settings.ensure_home()
    # A step opens the run's instance from the orchestrator's reference, whose local
    # folders are named by variables each role sets to its own (pipelines.instance).
    for name, value in role_environment(settings).items():
        os.environ.setdefault(name, value)
    celery = fleet_app(settings)
    level = logging.getLevelName(level_of(settings, "WARNING"))
    arguments = ["worker", "--queues", "dagster", "--loglevel", level,
                 "--hostname", f"{node or settings.role_id}@%h", "--without-gossip",
                 "--without-mingle", "--without-heartbeat"]  # fmt: skip
    if concurrency:
        arguments += ["--concurrency", str(concurrency)]
    click.echo(f"fleet worker {settings.role_id}: executing fleet steps from Redis")
    celery.worker_main(arguments)


@click.command()
@pass_app
def housekeeper(app: AppContext) -> None:
    """Fail export jobs whose run can no longer finish, submit jobs no run has taken and
    remove expired files, every 10 s until stopped (`orchestrator` and `up` start it)."""
    import threading

    from pipelines.housekeeping import run_housekeeper

    # What it does, at INFO unless QUARRY_LOG_LEVEL says otherwise: its own lines and the
    # export jobs' (the rest of the process keeps the CLI's level).
    for name in ("pipelines.exports", "exports"):
        logging.getLogger(name).setLevel(level_of(app.settings, "INFO"))
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    run_housekeeper(app.settings, stop)


def run_services(
    settings: Settings,
    *,
    host: str,
    port: int,
    dagster_port: int,
    on_api_ready: Callable[[str], None] | None = None,
) -> int:
    """Start every role on this machine and supervise them; returns the exit status. The
    addresses are printed once each service answers (`on_api_ready(base URL)` then too),
    "starting..." until then."""
    check_ports_free(host, {"the API": port, "the Dagster UI": dagster_port}, PORTS_HINT)
    api_url, dagster_url = f"http://{host}:{port}", f"http://{host}:{dagster_port}"
    gates, orchestrator = _orchestrator_commands(settings, host, dagster_port)
    commands = {
        "api": [_tool("quarry"), "serve", "--host", host, "--port", str(port)],
        **orchestrator,
    }

    def api_ready() -> None:
        click.echo(f"API ready on {api_url}")
        if on_api_ready is not None:
            on_api_ready(api_url)

    announcements = [
        Announcement(f"{api_url}/healthz", api_ready),
        Announcement(
            f"{dagster_url}/server_info", lambda: click.echo(f"Dagster UI ready on {dagster_url}")
        ),
    ]
    click.echo(f"starting the API (:{port}) and the Dagster UI (:{dagster_port}) ...")
    click.echo("Ctrl-C stops all of them.")
    # The API submits export runs to this Dagster, whatever QUARRY_DAGSTER_URL says.
    return _supervise(
        settings,
        commands,
        extra={"QUARRY_DAGSTER_URL": dagster_url},
        announcements=announcements,
        gates=gates,
    )


def _orchestrator_commands(
    settings: Settings, host: str, port: int
) -> tuple[dict[str, Callable[[], bool]], dict[str, list[str]]]:
    """The orchestrator's commands, and the gates among them: a command named in the gates
    must pass its gate before the commands after it start."""
    from pipelines.instance import write_instance_config
    from warehouse.lake import refuse_delta_home

    refuse_delta_home(settings)
    write_instance_config(settings)
    code_server: dict[str, list[str]] = {}
    gates: dict[str, Callable[[], bool]] = {}
    if settings.worker_address:
        workspace = _workspace(settings, _grpc_address(settings.worker_address))
    else:
        # The worker role on this machine, on a socket of this home (no port to collide
        # with): the webserver and the daemon reach it as they would a worker host's, so runs
        # start warm here too (pipelines.code_server). They start once it serves: a location
        # that fails its first load stays failed in the UI until reloaded.
        path = code_server_socket(settings)
        if accepts(path):
            raise ConfigurationError(
                f"a code server already serves {path}: another `quarry up` or `quarry "
                "orchestrator` runs on this QUARRY_HOME; stop it first, or give this one a home "
                "of its own"
            )
        path.unlink(missing_ok=True)  # left by a killed `up`
        code_server[CODE_SERVER] = _code_server_command(settings, "--socket", str(path))
        gates[CODE_SERVER] = lambda: accepts(path)
        workspace = _workspace(settings, {"socket": str(path)})
    return gates, code_server | {
        "dagster-webserver": [_tool("dagster-webserver"), "-w", str(workspace),
                              "-h", host, "-p", str(port),
                              *dagster_options(settings, "dagster-webserver")],
        "dagster-daemon": [_tool("dagster-daemon"), "run", "-w", str(workspace),
                           *dagster_options(settings, "dagster-daemon")],
        "housekeeper": [_tool("quarry"), "housekeeper"],
    }  # fmt: skip


def _supervise(
    settings: Settings,
    commands: dict[str, list[str]],
    extra: dict[str, str] | None = None,
    announcements: list[Announcement] | None = None,
    gates: dict[str, Callable[[], bool]] | None = None,
) -> int:
    env = _role_env(settings) | (extra or {})
    return Supervisor(
        commands,
        env=env,
        cwd=PROJECT_ROOT,
        announcements=announcements,
        gates=gates,
        json_logs=settings.log_format == "json",
    ).run()


def _role_env(settings: Settings) -> dict[str, str]:
    """The environment of a role's processes, once the home's storage is ready."""
    from pipelines.instance import open_instance, role_environment

    settings.ensure_home()
    # The registry and Dagster's storage are created and migrated here, once: children
    # starting together on a new home would each try to create the same tables, and all
    # but one fail.
    Registry(settings).dispose()
    with open_instance(settings):
        pass
    # Every role's processes import the project's packages from its root (the exports and
    # pipelines packages are not part of the installed distribution).
    path = os.pathsep.join(p for p in (str(PROJECT_ROOT), os.environ.get("PYTHONPATH")) if p)
    return dict(os.environ) | role_environment(settings) | {"PYTHONPATH": path}


def _location(settings: Settings) -> str:
    return settings.worker_address or "a code server of this machine"


def _grpc_address(worker_address: str) -> dict[str, str | int]:
    host, _, port = worker_address.rpartition(":")
    if not host or not port.isdigit():
        raise ConfigurationError(f"QUARRY_WORKER_ADDRESS must be host:port, got {worker_address!r}")
    return {"host": host, "port": int(port)}


def _workspace(settings: Settings, address: dict[str, str | int]) -> Path:
    """The workspace (written into DAGSTER_HOME) by which the orchestrator finds the code
    location: the code server at `address` (a `grpc_server` entry's host and port, or
    socket)."""
    workspace = {"load_from": [{"grpc_server": {**address, "location_name": LOCATION}}]}
    written = settings.resolved_dagster_home / "workspace.yaml"
    written.write_text(GRPC_HEADER + yaml.safe_dump(workspace, sort_keys=False))
    return written


def _tool(name: str) -> str:
    """An executable of this environment (beside the running Python), else on PATH."""
    beside = Path(sys.executable).parent / name
    return str(beside) if beside.exists() else (shutil.which(name) or name)


class Supervisor:
    """Child processes in their own process groups, stopped together; `announcements`
    said as their services answer. With `json_logs`, every line the children (and the
    processes they start) write goes through quarry.logs.as_quarry_json on its way to
    stderr: one format and one set of field names, whoever wrote the line."""

    def __init__(
        self,
        commands: dict[str, list[str]],
        *,
        env: dict[str, str],
        cwd: Path,
        announcements: list[Announcement] | None = None,
        gates: dict[str, Callable[[], bool]] | None = None,
        json_logs: bool = False,
    ):
        self.commands, self.env, self.cwd = commands, env, cwd
        self.children: dict[str, subprocess.Popen[bytes]] = {}
        self.announcements = list(announcements or [])
        self.gates = dict(gates or {})
        self.json_logs = json_logs
        self._pumps: list[threading.Thread] = []
        self._stop_requested = False

    def run(self) -> int:
        previous = {
            s: signal.signal(s, self._request_stop) for s in (signal.SIGINT, signal.SIGTERM)
        }
        try:
            for name, command in self.commands.items():
                # A session of its own: Ctrl-C in the terminal reaches us only, and we stop
                # each child's whole tree (the code server's forkserver and its runs).
                piped = subprocess.PIPE if self.json_logs else None
                self.children[name] = subprocess.Popen(
                    command, env=self.env, cwd=self.cwd, start_new_session=True,
                    stdout=piped, stderr=subprocess.STDOUT if self.json_logs else None,
                )  # fmt: skip
                if self.json_logs:
                    self._pump(name, self.children[name])
                if name in self.gates:
                    failed = self._watch(until=self.gates[name])
                    if failed or self._stop_requested:
                        break
            else:
                failed = self._watch()
        finally:
            self.stop_all()
            for pump in self._pumps:
                pump.join(timeout=STOP_GRACE_SECONDS)
            for signum, handler in previous.items():
                signal.signal(signum, handler)
        if failed:
            click.echo(f"error: {failed} exited; stopped the others", err=True)
            return 1
        return 0

    def _request_stop(self, signum: int, frame: FrameType | None) -> None:
        self._stop_requested = True

    def _pump(self, name: str, child: subprocess.Popen[bytes]) -> None:
        """Copies the child's lines to stderr as Quarry's JSON lines, until it (and every
        process holding its output) is gone."""
        from quarry.logs import as_quarry_json

        def copy() -> None:
            assert child.stdout is not None
            for raw in child.stdout:
                line = as_quarry_json(raw.decode("utf-8", "replace"), name)
                if line:
                    with _STDERR_LOCK:
                        sys.stderr.write(line + "\n")
                        sys.stderr.flush()

        pump = threading.Thread(target=copy, name=f"logs-{name}", daemon=True)
        pump.start()
        self._pumps.append(pump)

    def _watch(self, until: Callable[[], bool] | None = None) -> str | None:
        """Wait for a stop request (None), a child's exit (its name) or, given `until`, for
        it to pass (None; for up to CODE_SERVER_START_SECONDS); say each announcement once
        its service answers (probed about once a second)."""
        next_probe = 0.0
        deadline = time.monotonic() + CODE_SERVER_START_SECONDS
        while not self._stop_requested:
            for name, child in self.children.items():
                if child.poll() is not None:
                    return f"{name} (status {child.returncode})"
            if until is not None:
                if until():
                    return None
                if time.monotonic() >= deadline:
                    waited = list(self.children)[-1]
                    return f"{waited} (not ready in {CODE_SERVER_START_SECONDS:.0f} s)"
            if time.monotonic() >= next_probe:
                for announcement in self.announcements:
                    announcement.poll()
                next_probe = time.monotonic() + 1.0
            time.sleep(0.2)
        return None

    def stop_all(self) -> None:
        """SIGTERM every child's group, wait up to STOP_GRACE_SECONDS, then SIGKILL."""
        for child in self.children.values():
            _signal_group(child, signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_SECONDS
        while time.monotonic() < deadline and any(c.poll() is None for c in self.children.values()):
            time.sleep(0.1)
        for child in self.children.values():
            # Also the group of a child that exited: its own children may still run.
            _signal_group(child, signal.SIGKILL)
            child.wait()


_STDERR_LOCK = threading.Lock()


def _signal_group(child: subprocess.Popen[bytes], signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(child.pid, signum)


@click.command("start")
@click.option("--orders", default=50_000, show_default=True, help="Orders when seeding.")
@click.option("--stores", "store_count", default=3, show_default=True, help="Stores when seeding.")
@click.option("--seed", default=7, show_default=True, help="Random seed when seeding.")
@click.option("--port", default=8000, show_default=True, type=int, help="API port.")
@click.option("--dagster-port", default=3000, show_default=True, type=int, help="Dagster UI port.")
@pass_app
def demo_start(
    app: AppContext, orders: int, store_count: int, seed: int, port: int, dagster_port: int
) -> None:
    """Seed (or reuse) a demo account, sync it, and run the service; its API key and curl
    examples are printed once the API answers."""
    from cli.demo_key import demo_key, key_file

    settings, registry = app.settings, app.registry
    # Before the sync: a port in use should not cost the wait for it.
    host = "127.0.0.1"
    check_ports_free(host, {"the API": port, "the Dagster UI": dagster_port}, DEMO_PORTS_HINT)
    account_id = _newest_demo_account(registry)
    if account_id is None:
        from cli.demo_account import seed_demo

        click.echo(f"seeding a demo account: {store_count} stores, {orders:,} orders ...")
        account_id = seed_demo(settings, registry, orders=orders, stores=store_count, seed=seed)
        click.echo(f"demo account {account_id} (`--account {account_id}` in `quarry exports`)")
    else:
        click.echo(
            f"reusing demo account {account_id} (`--account {account_id}` in `quarry exports`;"
            " `quarry demo seed` makes a new one)"
        )
    with registry.session() as session:
        store_ids = [store.id for store in list_stores(session, account_id)]
    if not _sync_and_report(settings, registry, store_ids, full=False):
        sys.exit(1)
    key = demo_key(settings, registry, account_id)
    if key.reused:
        origin = f"the demo's key, the same as last time: kept in {key_file(settings)}"
    elif key.replaced_id:
        origin = f"a new demo key, kept in {key_file(settings)}; {key.replaced_id} revoked"
    else:
        origin = f"the demo's key, kept in {key_file(settings)} for the next run"

    def try_it(base: str) -> None:
        click.echo(f"\naccount: {account_id}\nAPI key: {key.secret}\n  ({origin})\n")
        click.echo(f"Web console: {base}/console (sign in with the API key above)\n\nTry:")
        for path in ("/v1/account", "/v1/stores", "/v1/orders?page_size=5"):
            click.echo(f"  curl -H 'Authorization: Bearer {key.secret}' '{base}{path}'")
        click.echo()

    sys.exit(
        run_services(settings, host=host, port=port, dagster_port=dagster_port, on_api_ready=try_it)
    )


def _newest_demo_account(registry: Registry) -> str | None:
    """The newest account with demo stores, or None."""
    from sqlalchemy import select

    from registry.models import Account, Store

    with registry.session() as session:
        return session.scalars(
            select(Account.id)
            .join(Store, Store.account_id == Account.id)
            .where(Store.platform == "demo")
            .order_by(Account.created_at.desc(), Account.id.desc())
            .limit(1)
        ).first()


COMMANDS = [sync, serve, up, orchestrator, worker, fleet_worker, housekeeper]
DEMO_COMMANDS = [demo_start]
