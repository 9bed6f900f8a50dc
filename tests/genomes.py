"""Small synthetic genomes and adversarial FASTA/FASTQ texts shared by the tests."""

import random

ADVERSARIAL_TEXTS = [
    b"",
    b"\n\n\r\n",
    b">only a header\n",
    b">h\nACG\n",                                         # record shorter than k
    b">h1 desc ACGTACGT\nACGTACGTAC\nGTACGTNNNNacgtacgtac\n>h2\n\nTTTTTTTTTTTTT",
    b">crlf\r\nACGTACGTAC\r\nGTACGTTTGA\r\n>x\r\nGGGGCCCCAAAA\r\n",
    b"@r1\nACGTACGTGGAC\n+\nIIIIIIIIIIII\n@r2\nacgtTTGCAAC\n+r2\n@ACGT@ACGTA\n",  # ACGT in quality
    b"@r1\r\nACGTACGTGGAC\r\n+\r\n@CGTACGTACGT\r\n",
    b">a\nNNNNNNNNNNNNNNNNNNNNNNNN\nACGTRYKMACGTACGTACGT-ACGT.ACGT acgt\n",
    b">empty1\n>empty2\n>x\nACGTACGTACGTACGTACGTACGTACGTACGTACGT\n",
    b"@q\n\n+\n\n@q2\nACGTACGTACGTAC\n+\nIIIIIIIIIIIIII\n",  # empty read
    b">a\nACGTACGT\n@notfastq\nACGTACGT\n",               # '@' inside a FASTA record
    b"\n\n>late header after blank lines\nCCCCCCCCCCGGGGGGGGGG\n",
    b">no final newline\nACGTTGCAACGTTGCA",
]


def random_sequence(rng: random.Random, length: int, alphabet: bytes = b"ACGT") -> bytes:
    return bytes(rng.choice(alphabet) for _ in range(length))


def random_genome_bytes(rng: random.Random, records: int = 3, length: int = 300,
                        line: int = 60, fastq: bool = False) -> bytes:
    """A well-formed FASTA (multi-line) or FASTQ text with N runs and lowercase bases."""
    out = []
    for record in range(records):
        seq = bytearray(random_sequence(rng, rng.randint(0, length), b"ACGTACGTACGTacgtN"))
        if fastq:
            quality = random_sequence(rng, len(seq), b"!#+5@ACGTI")
            out.append(b"@read%d\n%s\n+\n%s\n" % (record, bytes(seq), quality))
        else:
            body = b"\n".join(bytes(seq[i:i + line]) for i in range(0, len(seq), line))
            out.append(b">rec%d some description\n%s\n" % (record, body))
    return b"".join(out)


def random_text(rng: random.Random, length: int) -> bytes:
    """Unstructured bytes biased towards the characters the parser cares about."""
    return random_sequence(rng, length, b"ACGTacgtN\n\n\r>@+-")


def related_sequences(seed: int, count: int, length: int, step: float,
                      alphabet: bytes = b"ACGT") -> list[bytes]:
    """``count`` sequences of one random ACGT base sequence of ``length`` with a fraction
    ``step * i`` of its bases redrawn from ``alphabet`` in sequence i (similarity falls with i)."""
    import numpy as np
    rng = np.random.default_rng(seed)
    base = np.frombuffer(b"ACGT", np.uint8)[rng.integers(0, 4, length)]
    letters = np.frombuffer(alphabet, np.uint8)
    sequences = []
    for i in range(count):
        genome = base.copy()
        mutate = rng.random(genome.size) < step * i
        genome[mutate] = letters[rng.integers(0, letters.size, mutate.sum())]
        sequences.append(genome.tobytes())
    return sequences


def write_related_genomes(directory, count: int, length: int, step: float, seed: int,
                          prefix: str = "g"):
    """``count`` FASTA files ``{prefix}{i}.fa`` of :func:`related_sequences`."""
    paths = []
    for i, sequence in enumerate(related_sequences(seed, count, length, step)):
        path = directory / f"{prefix}{i}.fa"
        path.write_bytes(b">%s%d\n%s\n" % (prefix.encode(), i, sequence))
        paths.append(path)
    return paths


class Mutator:
    """Random ACGT sequences (numpy uint8 arrays) and copies of them with a fraction of their
    bases redrawn, from one seeded generator."""

    LETTERS = b"ACGT"

    def __init__(self, seed: int):
        import numpy as np
        self.rng = np.random.default_rng(seed)
        self.letters = np.frombuffer(self.LETTERS, np.uint8)

    def random(self, length: int):
        return self.letters[self.rng.integers(0, 4, length)]

    def mutate(self, sequence, fraction: float):
        out = sequence.copy()
        hit = self.rng.random(out.size) < fraction
        out[hit] = self.letters[self.rng.integers(0, 4, int(hit.sum()))]
        return out
