"""CRC-32C (Castagnoli) and TFRecord's masked form, without TensorFlow.

TFRecord frames carry masked CRC-32C checksums of their length and data. Checking them needs no
TensorFlow, which the pretraining-data worker processes never import (it costs seconds and
hundreds of MB per process).
"""

_MASK_DELTA = 0xA282EAD8


def _crc32c_table():
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        table.append(crc)
    return table


_TABLE = _crc32c_table()


def crc32c(data):
    """CRC-32C (Castagnoli), as TFRecord framing uses."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc32c(data):
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF
