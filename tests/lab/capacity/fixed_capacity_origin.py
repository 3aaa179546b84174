"""An HTTP origin of known capacity: WORKERS requests at a time, each held SERVICE_S seconds.

Run as ``python fixed_capacity_origin.py PORT WORKERS SERVICE_S``; capacity = WORKERS /
SERVICE_S requests per second. asyncio keeps any number of connections open, so the workers,
not the connections, limit it (a request waits for a free worker).
"""

from __future__ import annotations

import asyncio
import sys


async def main(port: int, workers: int, service_s: float) -> None:
    free = asyncio.Semaphore(workers)

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:  # one request per turn; ends when the client closes (IncompleteRead)
                head = await reader.readuntil(b"\r\n\r\n")
                if not head:
                    break
                async with free:
                    await asyncio.sleep(service_s)
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n"
                             b"Content-Type: text/plain\r\n\r\nok")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", port, backlog=1024)
    print("ready", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])))
