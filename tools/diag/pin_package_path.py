"""Make ``import c4table`` find this checkout's package wherever Python starts.

An editable install (``pip install -e .``) puts c4table on the import path through an import
hook that Python asks last, after every directory on ``sys.path``. Started in the directory
that holds the clone (itself named ``c4table``), Python finds that folder first, takes it for
a namespace package and never asks the hook: ``c4table.open_table`` is then missing.

This script adds, beside the editable install in the virtualenv's site-packages, a directory
holding one link, ``c4table`` -> this checkout's ``c4table/``, and a ``.pth`` file that puts
that directory on ``sys.path``. A regular package found anywhere on ``sys.path`` wins over a
namespace folder, so the real package is imported; ``c4table.pipeline`` still comes from the
editable install's hook. New modules are seen at once (the link is to the folder). ``make``
runs it after installing.

    python -m tools.diag.pin_package_path [SITE_DIR]    (default: the running Python's site-packages)
"""
from __future__ import annotations

import argparse
import sysconfig
from pathlib import Path

NAME = "__c4table_checkout__"


def pin(site: Path, package: Path) -> Path:
    """Write ``site/NAME/c4table`` (a link to ``package``) and ``site/NAME.pth``; return the
    ``.pth`` file."""
    holder = site / NAME
    holder.mkdir(parents=True, exist_ok=True)
    link = holder / "c4table"
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(package.resolve(), target_is_directory=True)
    pth = site / f"{NAME}.pth"
    pth.write_text(f"{holder.resolve()}\n")
    return pth


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("site_dir", nargs="?", type=Path,
                    help="where to write the link and the .pth file (default: the running "
                         "Python's site-packages)")
    args = ap.parse_args(argv)
    site = args.site_dir or Path(sysconfig.get_paths()["purelib"])
    package = Path(__file__).resolve().parents[2] / "c4table"
    print(f"{pin(site, package)}: import c4table finds {package}")


if __name__ == "__main__":
    main()
