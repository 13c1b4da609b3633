"""Programs whose subcommands run a command: ``uv run CMD``, ``docker exec CONTAINER CMD``, ...

A ``Runner`` is approved by its prefix (``uv run *``), yet runs whatever follows: the subcommand
that does (``run``, ``exec``, ``x``, ``record``) is read as a ``_shell_specs.Wrapper``, so that
what it runs is analyzed as if run directly. The options before the subcommand are skipped, and
the paths they name checked (``uv --directory DIR``, which the command then runs in). A runner
can hold another (``docker compose exec``, ``git bisect run``). Some run what follows elsewhere
(``Wrapper.elsewhere``: ``docker exec``, ``kubectl exec``, in ``_shell_remote.py``): its paths are
not this machine's, and the place counts as outside. ``runner`` finds the subcommand;
``_shell_wrappers`` analyzes it. ``RUNNING`` has the programs that run their arguments without a
subcommand (``npx``, ``gdb``, ``hyperfine``, ``ssh``).
"""

from __future__ import annotations

from collections.abc import Sequence

from ._shell_dialects import PARAMETER_LISTS, PARAMETER_SCANS
from ._shell_remote import COMPOSE, CRICTL, CTR, DISTROBOX_ENTER, DOCKER, KUBECTL, NERDCTL, SSH, TOOLBOX
from ._shell_specs import Runner, Wrapper
from ._shell_words import Parsed, parse_options


def _set(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: The runners passed through, each with the index of its word and its options; the subcommand's
#: spec; the index of the subcommand's word.
Found = tuple[list[tuple[Runner, int, Parsed]], Wrapper, int]


def runner(name: str, values: Sequence[str | None]) -> Found | None:
    """The subcommand of runner ``name`` that runs a command, in its words ``values`` (quoting
    removed; the first is the program), or None when it runs none (``uv sync``)."""
    spec: Wrapper | Runner = RUNNERS[name]
    at = 0
    chain: list[tuple[Runner, int, Parsed]] = []
    while isinstance(spec, Runner):
        if spec.commands.keys().isdisjoint(values[at + 1 :]):  # most often: cheaper than parsing
            return None
        first = values[at + 1] if at + 1 < len(values) else None
        skip = int(spec.toolchain and (first or "").startswith("+"))  # cargo +nightly watch
        takes = spec.values | spec.paths | spec.chdir
        parsed = parse_options(values[at + 1 + skip :], takes, leading_options=True)
        parsed.values = [(option, index + skip, attached) for option, index, attached in parsed.values]
        parsed.operands = [index + skip for index in parsed.operands]
        if not parsed.operands:
            return None
        index = at + 1 + parsed.operands[0]
        found = spec.commands.get(values[index] or "")
        if found is None:
            return None
        chain.append((spec, at, parsed))
        spec, at = found, index
    return chain, spec, at


# -- Python and JavaScript environments: the command runs with the project's tools on PATH ----------
_UV = _set("--project --cache-dir --color --python-preference --allow-insecure-host")
_UV_PATHS = _set("--config-file --with-requirements --env-file")
_UV_RESOLVE = _set(
    "-p --python --with --with-editable --index --default-index -i --index-url "
    "--extra-index-url -f --find-links --index-strategy --keyring-provider -P --upgrade-package "
    "--reinstall-package --resolution --prerelease --fork-strategy -C --config-setting "
    "--no-build-isolation-package --exclude-newer --link-mode --no-binary-package --no-build-package "
    "--refresh-package --python-platform -c --constraint --constraints --override --overrides "
    "--build-constraint --build-constraints -b"
)
_UV_RUN = Wrapper(
    _UV | _UV_RESOLVE | _set("--extra --no-extra --group --no-group --only-group --package"),
    _UV_PATHS,
    chdir=_set("--directory"),
)
_UVX = Wrapper(_UV | _UV_RESOLVE | _set("--from"), _UV_PATHS, chdir=_set("--directory"))
_POETRY = _set("-P --project")
_CONDA_RUN = Wrapper(_set("-n --name -p --prefix -a --attach --label"), chdir=_set("--cwd"))
_NPM = _set("-w --workspace --registry --cache --userconfig --loglevel --prefix")
_NPX = Wrapper(_NPM | _set("-p --package"), code=_set("-c --call"))
_PNPM = _set("--filter -F --filter-prod --workspace-concurrency --reporter --loglevel --store-dir")
_PNPM_EXEC = Wrapper(_PNPM, joining=_set("-c --shell-mode"), chdir=_set("-C --dir"))
_PNPM_DLX = Wrapper(_PNPM | _set("--package"), joining=_set("-c --shell-mode"))
_YARN = _set("--cwd --mutex --cache-folder --modules-folder --network-timeout")
_BUNX = Wrapper(_set("-p --package"))
_EXEC = Wrapper()  # asdf exec CMD, rbenv exec CMD, ...

# -- debuggers and profilers: they run the program they are given --------------------------------
_PERF = _set(
    "-e --event -p --pid -t --tid -C --cpu -G --cgroup -u --uid -D --delay --control -m --mmap-pages"
)
_PERF_RECORD = Wrapper(
    _PERF
    | _set("--filter -r --realtime -c --count -F --freq --call-graph -j --branch-filter --clockid -k")
    | _set("--aux-sample --affinity --mmap-flush --max-size --switch-max-files --switch-output-event"),
    _set("-o --output"),
)
_PERF_STAT = Wrapper(
    _PERF
    | _set("-r --repeat -x --field-separator --log-fd -I --interval-print --interval-count --timeout")
    | _set("-M --metrics --td-level --topdown --cputype"),
    _set("-o --output --input"),
    code=_set("--pre --post"),
)
_PERF_TRACE = Wrapper(
    _PERF
    | _set("--expr --duration --call-graph --max-stack --min-stack --max-events --filter-pids -F --pf")
    | _set("--proc-map-timeout --sort-events --summary-mode"),
    _set("-o --output"),
)
#: gdb's options before ``--args`` (gdb reads ``-ex`` and ``--ex`` alike, and ``-nx`` as one option)
#: and those giving a command.
GDB = Wrapper(
    _set("-ex --ex -iex --iex -eval-command --eval-command -init-eval-command --init-eval-command")
    | _set("-p --p -pid --pid -b --b -tty --tty -l --l -D --D")
    | _set("-x --x -ix --ix -command --command -init-command --init-command"),  # read as scripts
    _set("-d --d -directory")
    | _set("--directory -s --s -symbols --symbols -e --e -exec --exec -se --se -data-directory")
    | _set("--data-directory -c --c -core --core"),
    leading=2,  # gdb PROGRAM [CORE]: paths it reads; without --args, PROGRAM runs on its own
    leading_paths=True,
    chdir=_set("-cd --cd"),  # before it reads its scripts and runs the program
    until=_set("--args"),
    permute=True,
    long_only=True,
    program=True,
)
#: lldb's options; what follows them is the program and its arguments (after ``--`` too).
LLDB = Wrapper(
    _set("-o --one-line -O --one-line-before-file -k --one-line-on-crash -a --arch -p --attach-pid")
    | _set("-n --attach-name -l --script-language -R --repl-language")
    | _set("-s --source -S --source-before-file -K --source-on-crash"),  # read as scripts
    _set("-f --file -c --core -P"),
    optional=_set("-r --repl"),
    permute=True,
)
# -- tools that watch or time commands: they run their arguments, sometimes as scripts ------------
#: hyperfine CMD... runs each with ``sh -c`` (``-S SHELL``; ``-N`` splits it into words, read as a
#: script all the same), and so do ``--setup``, ``--prepare``, ``--conclude`` and ``--cleanup``.
_HYPERFINE = Wrapper(
    _set("-w --warmup -m --min-runs -M --max-runs -r --runs -P --parameter-scan -D --parameter-step-size")
    | _set("-L --parameter-list --style --sort -u --time-unit -n --command-name --min-benchmarking-time"),
    _set("--export-asciidoc --export-csv --export-json --export-markdown --export-orgmode --input")
    | _set("--output"),
    optional=_set("-i --ignore-failure"),
    wrapped="scripts",
    code=_set("-s --setup -p --prepare --conclude -c --cleanup --reference"),
    shells=_set("-S --shell"),
    permute=True,
    parameters=PARAMETER_LISTS | PARAMETER_SCANS,
    spans={**dict.fromkeys(PARAMETER_LISTS, 2), **dict.fromkeys(PARAMETER_SCANS, 3)},
)
#: watchexec [OPTIONS] [--] CMD...: the words are joined into a script for ``$SHELL -c``
#: (``--shell SHELL``), or run as a command with ``-n`` (``--shell=none``).
_WATCHEXEC = Wrapper(
    _set("-o --on-busy-update -s --signal --stop-signal --stop-timeout --map-signal -d --debounce")
    | _set("-e --exts -f --filter -j --filter-prog -i --ignore --fs-events --emit-events-to --delay-run")
    | _set("--timeout --wrap-process --socket -Q --quote --color --completions -E --env"),
    _set("-w --watch -W --watch-non-recursive -F --watch-file --project-origin --filter-file")
    | _set("--ignore-file --log-file"),
    optional=_set("-c --clear --poll -N --notify --log-file"),
    chdir=_set("--workdir"),
    wrapped="joined",
    direct=_set("-n --no-shell"),
    shells=_set("--shell"),
    environment=_set("-E --env"),
)

#: cargo watch: ``-x SUBCOMMAND`` runs ``cargo SUBCOMMAND``, ``-s SCRIPT`` a script, both through
#: a shell (``--use-shell SHELL``), in turn; ``-- CMD`` a command.
_CARGO_WATCH = Wrapper(
    _set("-w --watch -i --ignore -d --delay --features -B -L --why --poll-interval"),
    _set("--env-file"),
    chdir=_set("-C --workdir"),
    code=_set("-s --shell"),
    shells=_set("--use-shell"),
    permute=True,
    programs={"-x": "cargo", "--exec": "cargo"},
)

#: Programs that run their arguments as a command (``_shell_specs.WRAPPERS`` has more).
RUNNING: dict[str, Wrapper] = {
    "uvx": _UVX,
    "npx": _NPX,
    "pnpx": _PNPM_DLX,
    "bunx": _BUNX,
    "gdb": GDB,
    "lldb": LLDB,
    "hyperfine": _HYPERFINE,
    "watchexec": _WATCHEXEC,
    "entr": Wrapper(joining=_set("-s")),  # entr -s: the first word is a script for $SHELL
    "nodemon": Wrapper(  # nodemon --exec CMD ARGS: joined into a script; without it, node SCRIPT
        _set("-w --watch -e --ext -i --ignore -d --delay --signal"),
        _set("--config"),
        wrapped="joined",
        until=_set("-x --exec"),
    ),
    "strace": Wrapper(
        _set("-e -p -s -u -a -b -E -I -O -P -S -U -X --attach --user --env --string-limit --columns")
        | _set("--trace --signal --status --read --write --fault --inject --trace-path --summary-sort")
        | _set("--const-print-style"),
        _set("-o --output"),
        optional=_set(
            "-k --stack-trace --timestamps --absolute-timestamps --quiet --decode-fds --decode-pids"
        ),
    ),
    "ltrace": Wrapper(_set("-a -A -D -e -n -p -s -u -w -x"), _set("-o -F -l --output --config --library")),
    "ssh": SSH,
    "distrobox-enter": DISTROBOX_ENTER,
    "nix-shell": Wrapper(  # nix-shell [PATH | -p PACKAGES] --run CMD
        _set("-I -A --attr --arg --argstr --option -j --max-jobs --cores"),
        leading=1 << 16,
        leading_paths=True,
        code=_set("--run --command"),
        permute=True,
    ),
}

#: Programs that run a command in a terminal session or later: ``_shell_sessions``.
SESSIONS = _set("tmux screen at batch crontab")

RUNNERS: dict[str, Runner] = {
    "uv": Runner({"run": _UV_RUN, "tool": Runner({"run": _UVX})}, _UV, _UV_PATHS, _set("--directory")),
    "poetry": Runner(
        {"run": Wrapper(_POETRY, chdir=_set("-C --directory"))}, _POETRY, chdir=_set("-C --directory")
    ),
    "pdm": Runner({"run": Wrapper(_set("-p --project --venv"))}, _set("-p --project")),
    "pipenv": Runner({"run": Wrapper(_set("--python"))}, _set("--python")),
    "hatch": Runner({"run": Wrapper()}, _set("-e --env -p --project --data-dir --cache-dir --config")),
    "rye": Runner({"run": Wrapper(_set("--pyproject"))}),
    "pixi": Runner({"run": Wrapper(_set("-e --environment --manifest-path"))}, _set("--manifest-path")),
    "pipx": Runner({"run": Wrapper(_set("--spec --python --pip-args --index-url"))}),
    **dict.fromkeys(_set("conda mamba micromamba"), Runner({"run": _CONDA_RUN})),
    "npm": Runner({"exec": _NPX, "x": _NPX}, _NPM),
    "pnpm": Runner({"exec": _PNPM_EXEC, "dlx": _PNPM_DLX}, _PNPM, chdir=_set("-C --dir")),
    "yarn": Runner(
        {"exec": Wrapper(_YARN, wrapped="joined"), "dlx": Wrapper(_YARN | _set("-p --package"))},
        _YARN,
    ),
    "bun": Runner({"x": _BUNX}, _set("--cwd")),
    "bundle": Runner({"exec": Wrapper(_set("--gemfile"))}, _set("--gemfile")),
    **dict.fromkeys(_set("asdf rbenv pyenv nodenv goenv"), Runner({"exec": _EXEC})),
    "mise": Runner(
        dict.fromkeys(
            _set("exec x"), Wrapper(_set("-j --jobs"), until=_set("--"), code=_set("-c --command"))
        ),
        _set("-E --env -j --jobs"),
        chdir=_set("-C --cd"),
    ),
    "direnv": Runner({"exec": Wrapper(leading=1, leading_paths=True)}),
    "nix": Runner(dict.fromkeys(_set("develop shell"), Wrapper(until=_set("-c --command")))),
    "op": Runner({"run": Wrapper(_set("--account --cache --config --session"), _set("--env-file"))}),
    "doppler": Runner(
        {
            "run": Wrapper(
                _set("-p --project -c --config --token --scope --mount-format"), code=_set("--command")
            )
        }
    ),
    "aws-vault": Runner({"exec": Wrapper(_set("-d --duration -t --mfa-token --region --prompt"), leading=1)}),
    "perf": Runner(
        {"record": _PERF_RECORD, "stat": _PERF_STAT, "trace": _PERF_TRACE}, paths=_set("--exec-path")
    ),
    "rr": Runner(
        {
            "record": Wrapper(
                _set("-c --num-cpu-ticks -b --bind-to-cpu --env --cpu-unbound"), _set("-o --output-trace-dir")
            )
        }
    ),
    "git": Runner(
        {"bisect": Runner({"run": Wrapper()})},
        _set("-c --namespace --config-env"),
        _set("--git-dir --work-tree --exec-path"),
        _set("-C"),
    ),
    "docker": DOCKER,
    "podman": DOCKER,
    "docker-compose": COMPOSE,
    "podman-compose": COMPOSE,
    "kubectl": KUBECTL,
    "nerdctl": NERDCTL,
    "ctr": CTR,
    "crictl": CRICTL,
    "distrobox": Runner({"enter": DISTROBOX_ENTER}),
    "toolbox": TOOLBOX,
    "cargo": Runner({"watch": _CARGO_WATCH}, _set("--color -Z --config"), chdir=_set("-C"), toolchain=True),
    "oc": KUBECTL,
}
