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
