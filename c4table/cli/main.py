"""The ``c4table`` command line's wiring: the process set-up (one BLAS thread, one malloc
arena), the command group with every command registered (one module per family: build, plan,
lookup, verify, stats, export, label, c4z, serve, bdd), the message of Ctrl-C, and
:func:`main`, which maps every expected error to one line and an exit code.

Errors a user can cause end with one line on stderr (``c4table: error: ...``) and the exit
status of their class (:mod:`c4table.errors`): 2 when the command cannot do what it was asked
with the input it was given, 1 when it ran and something failed. Nothing prints a traceback.
"""
# Each command imports what it uses inside its function, and the readers' commands load on
# first use (_Commands.LAZY): `import c4table.cli.main` takes 0.15-0.25 s, importing the build,
# the readers, export, .c4z and BDD mode up front 0.7-2.2 s (2-core EPYC VM at load 4,
# 2026-11-26), which every `c4table --help` and every `lookup` would pay.
from __future__ import annotations

import os
import sys

# One BLAS thread per process, set before numpy is first imported (c4table's package import does
# not import it): numpy's OpenBLAS otherwise starts a thread per core at import, which costs
# start-up and exit time in every command and build worker, and nothing here uses BLAS. An
# explicit setting in the environment wins. OMP_NUM_THREADS is left alone: pyarrow sizes its
# own thread pool from it.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
# And one malloc arena for all threads, before pyarrow's import starts a second one
# (pipeline/runtime/allocator.py: the build's workers then reuse the memory Arrow's threads free).
import c4table.config as config
from c4table.pipeline.runtime.allocator import one_arena  # noqa: E402

one_arena()

import click

from c4table.cli.fail import fail as _fail
from c4table.cli.process import fast_exit, skip_finalization
from c4table.errors import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_INTERRUPTED, C4Error


class _Commands(click.Group):
    """The command group; BDD mode's commands (``bdd``, ``crosscheck``) are imported when first
    named or listed: their modules (oxidd and the BDD engine) are a tenth of the start-up time
    of every other command, ``build`` included."""

    LAZY = ("bdd", "crosscheck")

    def _load_lazy(self) -> None:
        if getattr(self, "_lazy_loaded", False):
            return
        self._lazy_loaded = True
        try:
            from c4table.cli.bdd import bdd, crosscheck
        except ImportError:  # BDD mode needs oxidd
            return
        self.add_command(bdd)
        self.add_command(crosscheck)
        from c4table.cli.examples import add_examples
        add_examples(self)

    def list_commands(self, ctx):
        self._load_lazy()
        return super().list_commands(ctx)

    def get_command(self, ctx, name):
        if name in self.LAZY:
            self._load_lazy()
        return super().get_command(ctx, name)

    #: The sections of ``c4table --help``, in order: (title, commands). The stages a build runs
    #: come last, apart: ``build`` runs them all and resumes, they are for running one alone.
    SECTIONS = (
        ("Build", ("build", "plan")),
        ("Query", ("lookup", "best", "play", "serve")),
        ("Check and count", ("verify", "stats", "bdd", "crosscheck")),
        ("Data for other tools", ("export", "label", "compress", "decompress")),
        ("Stages of a build (build runs all three; each alone is for a cluster or a test)",
         ("forward", "backward", "merge")),
    )

    def format_commands(self, ctx, formatter) -> None:
        """The commands in :data:`SECTIONS` (any other under "Other commands")."""
        names = self.list_commands(ctx)
        placed = {n for _, group in self.SECTIONS for n in group}
        sections = [*self.SECTIONS, ("Other commands", tuple(n for n in names if n not in placed))]
        width = formatter.width - 6 - max((len(n) for n in names), default=0)
        for title, group in sections:
            rows = [(n, self.get_command(ctx, n).get_short_help_str(width)) for n in group
                    if n in names and not self.get_command(ctx, n).hidden]
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)

    def resolve_command(self, ctx, args):
        name, cmd, rest = super().resolve_command(ctx, args)
        global _running, _running_args
        _running = cmd.name if cmd is not None else name
        _running_args = list(rest)
        return name, cmd, rest


_running: str | None = None   # the command being run, for the message on Ctrl-C
_running_args: list[str] = []   # and its arguments

_STAGES = ("build", "forward", "backward", "merge")
_RESUME = "interrupted; finished steps are kept, rerun the same command to resume"
ON_INTERRUPT = {
    **dict.fromkeys(_STAGES, _RESUME),
    **dict.fromkeys(("compress", "decompress"),
                    "interrupted; finished blocks are kept, rerun the same command to resume"),
    "export": "interrupted; the parquet file was not written, rerun the same command to export",
    "label": "interrupted; the parquet file was not written, rerun the same command to label",
    "verify": "interrupted; the table was not changed, rerun the same command to verify it",
}


def interrupted_message() -> str:
    """What Ctrl-C says: for a long command, what to do next (:data:`ON_INTERRUPT`). A build
    run with ``--restart`` resumes when rerun without it (with it, it would start over): the
    message gives that command (:func:`_interrupted_build`)."""
    if _running in _STAGES and "--restart" in _running_args:
        return _interrupted_build(_running, _running_args)
    return ON_INTERRUPT.get(_running, "interrupted")


def _interrupted_build(name: str, args: list[str]) -> str:
    """The message of a build stage ``name`` run with ``args`` (holding ``--restart``).

    >>> _interrupted_build("build", ["5x5", "--out", "my dir", "--restart"])
    "interrupted; finished steps are kept, rerun without --restart to resume: c4table build 5x5 --out 'my dir'"
    """
    import shlex
    again = shlex.join(["c4table", name, *(a for a in args if a != "--restart")])
    return f"interrupted; finished steps are kept, rerun without --restart to resume: {again}"


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="c4table")
def cli() -> None:
    """Build, verify and query complete Connect-4 lookup tables (Sidney Cadot's format)."""


def _register_commands() -> None:
    from c4table.cli import build, c4z, export, label, lookup, plan, stats, verify
    for family in (build, plan, lookup, verify, stats, export, label, c4z):
        for command in family.COMMANDS:
            cli.add_command(command)
    from c4table.cli.serve import serve
    cli.add_command(serve)
    # bdd and crosscheck: registered on first use (_Commands)
    from c4table.cli.examples import add_examples
    add_examples(cli)


_register_commands()


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the CLI, turning every expected error into one line and an exit code.

    A c4table error exits with its class's status (:mod:`c4table.errors`); click's usage
    errors and text that is not valid UTF-8 with 2 (bad input); a worker process that died,
    memory or disk exhausted, and any other error with 1; Ctrl-C with 130. No traceback is
    printed unless ``C4TABLE_TRACEBACK=1``."""
    from concurrent.futures.process import BrokenProcessPool
    if argv is None:   # the command line's own process (a caller passing argv may go on)
        fast_exit()
    try:
        # without standalone mode click *returns* the code a command gave ctx.exit(n)
        rc = cli.main(args=argv, prog_name="c4table", standalone_mode=False)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)
    except getattr(click.exceptions, "NoArgsIsHelpError", ()) as e:
        click.echo(e.ctx.get_help())   # bare "c4table" or a bare group: the help is the answer
        sys.exit(0)
    except click.UsageError as e:
        hint = f" (see '{e.ctx.command_path} --help')" if e.ctx is not None else ""
        _fail(_one_line(e.format_message()) + hint, e.exit_code)
    except click.ClickException as e:
        _fail(_one_line(e.format_message()), e.exit_code)
    except click.exceptions.Abort as e:
        # click turns Ctrl-C (KeyboardInterrupt) into Abort; its cause says which it was
        if isinstance(e.__cause__, KeyboardInterrupt):
            _fail(interrupted_message(), EXIT_INTERRUPTED)
        _fail("aborted", EXIT_INTERRUPTED)
    except KeyboardInterrupt:
        _fail(interrupted_message(), EXIT_INTERRUPTED)
    except C4Error as e:
        _fail(_one_line(str(e)), e.exit_status)
    except UnicodeError as e:
        _fail(f"input is not valid text: {_one_line(str(e))}", EXIT_BAD_INPUT)
    except BrokenProcessPool:
        _fail("a worker process died (killed, out of memory or crashed); finished steps are kept, "
              "rerun the same command to resume", EXIT_FAILED)
    except MemoryError:
        _fail("out of memory; finished steps are kept: lower --memory or --workers and rerun to "
              "resume", EXIT_FAILED)
    except OSError as e:
        from c4table.pipeline.runtime.resources import refused_remedy, write_refused
        reason = write_refused(e)
        if reason is not None:   # a full disk, a quota, the file size limit (ulimit -f)
            _fail(f"{reason} ({e.filename or 'build directory'}); finished steps are kept, "
                  f"{refused_remedy(reason)} and rerun to resume", EXIT_FAILED)
        _fail(_one_line(f"{e.strerror or e} ({e.filename})" if e.filename else str(e)), EXIT_FAILED)
    except Exception as e:  # noqa: BLE001 - the promise is one line, never a traceback
        if config.get("C4TABLE_TRACEBACK"):
            raise
        _fail(_one_line(f"internal error: {type(e).__name__}: {e} (set C4TABLE_TRACEBACK=1 "
                        "for the traceback)"), EXIT_FAILED)
    if argv is None and skip_finalization() and rc in (None, 0):
        # the command line's own process, a build that finished: its files are closed and
        # durable, its workers joined, its lock given back; what is left is the interpreter's
        # finalization (module teardown, thread-pool joins of idle threads), ~20 ms of nothing
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except (OSError, ValueError):   # e.g. a closed pipe: the usual exit reports it
            pass
        else:
            os._exit(0)
    sys.exit(rc if isinstance(rc, int) else 0)


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


if __name__ == "__main__":
    main()
