"""The version of vizhooks, read once (the one place it is written is pyproject.toml)."""

from __future__ import annotations

from importlib import metadata


def package_version() -> str:
    """The installed distribution's version; in a source checkout that was never installed, the one
    in the pyproject.toml beside the package (pyproject is the only place a version is written)."""
    try:
        return metadata.version("vizhooks")
    except metadata.PackageNotFoundError:
        pass
    import tomllib
    from pathlib import Path

    pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
    try:
        project = tomllib.loads(pyproject.read_text("utf-8"))["project"]
    except (OSError, ValueError, KeyError):  # no pyproject, or not one we can read
        return "0+unknown"
    return str(project["version"]) if project.get("name") == "vizhooks" else "0+unknown"


__version__ = package_version()
