# virtbench's capture decoder (_capscan.c); see the docstrings of scan() and records().
from typing import Any, TypeAlias

import numpy.typing as npt
from typing_extensions import Buffer

# anything with the buffer protocol (numpy's stubs declare it only for Python >= 3.12)
_Buffer: TypeAlias = Buffer | npt.NDArray[Any]
FlowRow = tuple[tuple[int, int, int, int, int], int, int, int, int, int, int, bool]

def scan(buffer: _Buffer, pcapng: bool, big: bool, record_header: int, scale: int,
         linktype: int, /, flow_ids: _Buffer | None = None,
         ) -> tuple[int, int, int, int, list[FlowRow]]: ...
def records(buffer: _Buffer, pcapng: bool, big: bool, record_header: int, scale: int,
            linktype: int, ts: _Buffer, orig: _Buffer, cap: _Buffer, off: _Buffer,
            iface: _Buffer, /) -> tuple[int, int, int, int, list[tuple[int, int]]]: ...
