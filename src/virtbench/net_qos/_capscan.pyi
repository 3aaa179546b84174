# The C scanner (_capscan.c); see its scan() docstring.
import mmap

FlowRow = tuple[tuple[int, int, int, int, int], int, int, int, int, int, int, bool]

def scan(buffer: bytes | mmap.mmap, pcapng: bool, big: bool, record_header: int, scale: int,
         linktype: int, /) -> tuple[int, int, int, int, list[FlowRow]]: ...
