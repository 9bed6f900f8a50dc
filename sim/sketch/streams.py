"""Shared helpers for the sketch datapath tests: byte streams, beat packing, random stimulus."""

import random

__all__ = ["SAMPLE_FILES", "random_genome_file", "lane_beats"]

SAMPLE_FILES = {
    "fasta": b">chr1 desc\nACGTACGTTGCA\nacgtNNacgtacgtaaccggtt\n>chr2\n\nGATTACAGATTACA\n",
    "fastq": b"@r1\nACGTTGCAACGT\n+\nIIIIIIIIIIII\n@r2\nTTTTGGGGCCCCAAAA\n+r2\n@@@@@@@@@@@@@@@@\n",
    "crlf": b">h\r\nACGTA\r\nCGTAC\r\n\r\nGTACG\r\n>h2\r\nNNACGTACGTAC\r\n",
    "edge": b"\n\n>\n>e\n\n@notfastq\nACGTACGT@ACGT\n>x\n@q\n\n+\n\nACGTACGTAC\n>ACGT\nAC-GT.ACGT AC\x00GT\xffACGTACGTA",
}


def random_genome_file(rng: random.Random, length: int) -> bytes:
    """A FASTA or FASTQ file with headers, wrapped lines, N runs, lowercase, CRLF, empty records."""
    crlf = rng.random() < 0.3
    fastq = rng.random() < 0.3
    out = bytearray()
    while len(out) < length:
        if fastq:
            seq = bytes(rng.choice(b"ACGTacgtN") for _ in range(rng.randint(0, 60)))
            out += b"@read%d\n" % rng.randint(0, 999) + seq + b"\n+\n" + bytes(
                rng.choice(b"!#@>ACGT+") for _ in seq) + b"\n"
        else:
            out += b">record %d\n" % rng.randint(0, 999)
            for _ in range(rng.randint(0, 5)):
                line = bytearray(rng.choice(b"ACGTACGTACGTacgtN") for _ in range(rng.randint(0, 70)))
                if rng.random() < 0.2 and line:
                    start = rng.randrange(len(line))
                    line[start:start + rng.randint(1, 20)] = b"N" * 8
                out += line + b"\n"
    if crlf:
        out = out.replace(b"\n", b"\r\n")
    return bytes(out)


def lane_beats(data: bytes, bytes_per_lane: int, rng: random.Random | None = None,
               pad_probability: float = 0.0):
    """Split ``data`` into beats ``(bytes, byte_valid)`` of ``bytes_per_lane`` bytes, randomly
    interleaving invalid padding bytes (which the parser must ignore)."""
    slots = []
    for byte in data:
        while rng is not None and rng.random() < pad_probability:
            slots.append(None)
        slots.append(byte)
    while len(slots) % bytes_per_lane:
        slots.append(None)
    beats = []
    for start in range(0, len(slots), bytes_per_lane):
        chunk = slots[start:start + bytes_per_lane]
        value = sum((b or 0) << (8 * j) for j, b in enumerate(chunk))
        valid = sum(1 << j for j, b in enumerate(chunk) if b is not None)
        beats.append((value, valid))
    return beats
