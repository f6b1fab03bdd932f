"""The Redis store's Lua scripts are files beside it: each one is used, compiles, and ships with the package."""

import tomllib
from fnmatch import fnmatch
from pathlib import Path

from redis.asyncio import Redis

import app.jobs.redis as redis_store
from tests.jobs.conftest import REDIS_URL

LUA_DIR = Path(redis_store.__file__).with_name("lua")
SCRIPTS = sorted(path.stem for path in LUA_DIR.glob("*.lua") if path.stem != "common")


def test_every_lua_script_is_registered_by_the_redis_store() -> None:
    source = Path(redis_store.__file__).read_text("utf-8")
    assert SCRIPTS, LUA_DIR
    assert [name for name in SCRIPTS if f'lua("{name}")' not in source] == []


def test_lua_scripts_are_declared_as_package_data() -> None:
    pyproject = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text("utf-8"))
    globs = pyproject["tool"]["setuptools"]["package-data"]["app"]
    files = [path.relative_to(LUA_DIR.parents[1]).as_posix() for path in LUA_DIR.glob("*.lua")]
    assert [f for f in files if not any(fnmatch(f, pattern) for pattern in globs)] == []


async def test_every_lua_script_compiles_in_redis() -> None:
    client = Redis.from_url(REDIS_URL)
    try:
        for name in SCRIPTS:  # SCRIPT LOAD compiles without running: a syntax error fails here
            assert len(await client.script_load(redis_store.lua(name))) == 40, name
    finally:
        await client.aclose()
