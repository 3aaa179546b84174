"""Standalone AES timing probe; runs on the target as
`python3 -c SRC MODE OPS BULK_BYTES HEXTEXT CHUNK SUMMARY`.

Study method (mode study): AES-128-ECB + PKCS7 of a ~2 KB text, a fresh Cipher per operation,
encryption and decryption (update+finalize) timed separately, as study 000's code did.
Bulk mode: one encryptor over a large buffer in CHUNK-byte calls, like `openssl speed -evp`.
Kept free of virtbench imports so a target only needs the `cryptography` package.
"""

import json
import os
import statistics
import sys
import time

from cryptography.hazmat.primitives import padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

mode, ops, bulk_bytes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
plaintext = bytes.fromhex(sys.argv[4])
chunk = int(sys.argv[5]) if len(sys.argv) > 5 else 64 * 1024
summary = sys.argv[6] if len(sys.argv) > 6 else "median"
key = b"sixteenbytekey12"
result: dict[str, object] = {}
# The timed sections' span on CLOCK_MONOTONIC, from the first one's start to the last one's
# end: a profile keeps only its samples (not the random buffer's or the warm-up's).
window: list[float] = []

if mode in ("study", "both"):
    enc_times, dec_times = [], []
    window.append(time.monotonic())
    for _ in range(ops):
        encryptor = Cipher(algorithms.AES(key), modes.ECB()).encryptor()
        padder = padding.PKCS7(128).padder()
        padded = padder.update(plaintext) + padder.finalize()
        start = time.perf_counter()
        ciphertext = encryptor.update(padded) + encryptor.finalize()
        enc_times.append(time.perf_counter() - start)
        decryptor = Cipher(algorithms.AES(key), modes.ECB()).decryptor()
        start = time.perf_counter()
        padded_back = decryptor.update(ciphertext) + decryptor.finalize()
        dec_times.append(time.perf_counter() - start)
        unpadder = padding.PKCS7(128).unpadder()
        if unpadder.update(padded_back) + unpadder.finalize() != plaintext:
            raise SystemExit("AES round trip failed")
    if summary == "mean":  # the study's estimator
        result["encrypt_time_s"] = sum(enc_times) / ops
        result["decrypt_time_s"] = sum(dec_times) / ops
    else:
        result["encrypt_time_s"] = statistics.median(enc_times)
        result["decrypt_time_s"] = statistics.median(dec_times)
    result["plaintext_bytes"] = len(plaintext)

if mode in ("bulk", "both"):
    block = os.urandom(chunk)
    encryptor = Cipher(algorithms.AES(key), modes.ECB()).encryptor()
    buffer = bytearray(chunk + 15)  # update_into needs room for one more block
    encryptor.update_into(block, buffer)  # warm up
    # Eight equal segments; the median segment's rate keeps a burst of other work on the
    # machine out of the trial's value.
    per_segment = max(1, bulk_bytes // chunk // 8)
    rates = []
    if not window:
        window.append(time.monotonic())
    for _ in range(8):
        start = time.perf_counter()
        for _ in range(per_segment):
            encryptor.update_into(block, buffer)
        rates.append(per_segment * chunk / (time.perf_counter() - start))
    result["bulk_throughput_Bps"] = sorted(rates)[3] / 2 + sorted(rates)[4] / 2

window.append(time.monotonic())
result["window"] = window
print(json.dumps(result))
