"""End-to-end job for the stack memo under CPython: the same native stack
(ctypes -> the driver) reached from two Python callers in turn, many times.
The memo answers the native frames; the Python frames must still be each
call's own."""
import e2e_data

BYTES_A = 4096
BYTES_B = 8192


def from_a(cuda):
    e2e_data.release(cuda, e2e_data.alloc(cuda, BYTES_A))  # SITE:from_a


def from_b(cuda):
    e2e_data.release(cuda, e2e_data.alloc(cuda, BYTES_B))  # SITE:from_b


def main():
    cuda = e2e_data.open_driver()
    for i in range(300):
        if i % 3:
            from_a(cuda)
        else:
            from_b(cuda)


if __name__ == "__main__":
    main()
