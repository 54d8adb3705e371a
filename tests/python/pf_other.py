# Second source file for the capture tests: frames from two files, a class,
# a generator, a coroutine and a non-ASCII function name.
import asyncio


def relay(fn, depth):
    if depth == 0:
        return fn()
    return relay(fn, depth - 1)


class Holder:
    def method(self, fn):
        return fn()


def gen(fn):
    yield fn()


async def coro(fn):
    return fn()


def run_coro(fn):
    return asyncio.run(coro(fn))


def données(fn):
    return fn()


def 数据(fn):
    return fn()


class Builds:
    """Constructed many times: 3.12+ specialises the call to __init__ and runs
    it under an interpreter-internal cleanup frame."""
    def __init__(self, fn):
        self.result = fn()


def construct(fn, times):
    for _ in range(times):
        obj = Builds(fn)
    return obj.result
