"""Reference Priority Queue Array (SPEC section 4).

2^R queues of n entries. An entry is (tag, value); value 0 means empty, and an empty entry never
matches a tag. A queue is a list of n entries sorted by value, descending, empty entries last.

Insert (tag, e), e >= 1, into one queue:

1. If a non-empty entry has this tag, that entry is taken out of the queue (its value is about
   to become e). Otherwise, if e > the value of the last entry (the smallest; 0 when the queue
   has a free entry), the last entry is taken out. Otherwise (tag, e) is discarded.
2. (tag, e) is put back after every remaining entry whose value is >= e, and before the others.

So equal values keep their older order and the new or updated entry goes after its equals; when
several entries share the smallest value the last of them (the most recently placed) is evicted.
An update may lower a value (two k-mers with equal row-0 hash share a queue and a tag, and
saturated or colliding estimates are not monotonic per tag); the entry then moves down.

Union of two PQAs with the same (R, n), per queue: the entries of P in order, each with the value
of Q's entry of equal tag added, then the entries of Q whose tag is not in P, in order. A united
queue has n to 2n entries and is not sorted; only its multiset of values matters (entropy).
"""

from ..params import PQA_QUEUE_BITS, PQA_SLOTS

__all__ = ["EMPTY", "Pqa", "queue_insert", "union"]

EMPTY = (0, 0)
VALUE_LIMIT = 1 << 32  # values are 32-bit (the Count-Min estimate)


def queue_insert(queue: list[tuple[int, int]], tag: int, value: int) -> None:
    """Insert (tag, value) into one sorted queue in place (rules in the module docstring)."""
    if not 1 <= value < VALUE_LIMIT:
        raise ValueError(f"PQA value must be from 1 to 2^32-1, not {value!r}")
    for position, (entry_tag, entry_value) in enumerate(queue):
        if entry_value and entry_tag == tag:
            taken = position
            break
    else:
        if value <= queue[-1][1]:
            return
        taken = len(queue) - 1
    del queue[taken]
    place = 0
    while place < len(queue) and queue[place][1] >= value:
        place += 1
    queue.insert(place, (tag, value))


class Pqa:
    """2^R queues of n (tag, value) entries; ``queues[q][j]``, j = 0 holds the largest value."""

    def __init__(self, R: int, n: int, queues: list[list[tuple[int, int]]] | None = None):
        PQA_QUEUE_BITS.check(R)
        PQA_SLOTS.check(n)
        self.R = R
        self.n = n
        if queues is None:
            queues = [[EMPTY] * n for _ in range(1 << R)]
        elif len(queues) != 1 << R or any(len(queue) != n for queue in queues):
            raise ValueError(f"queues must be 2^R = {1 << R} lists of n = {n} entries")
        self.queues = queues

    def insert_hash(self, h0: int, value: int) -> None:
        """Insert the estimate of a key whose row-0 hash is h0: queue = low R bits, tag = rest."""
        self.insert(h0 & ((1 << self.R) - 1), h0 >> self.R, value)

    def insert(self, queue_index: int, tag: int, value: int) -> None:
        queue_insert(self.queues[queue_index], tag, value)

    def values(self) -> list[int]:
        """The values of all non-empty entries, queue by queue."""
        return [value for queue in self.queues for _, value in queue if value]

    def total(self) -> int:
        return sum(self.values())

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Pqa) and (self.R, self.n) == (other.R, other.n)
                and self.queues == other.queues)

    def __repr__(self) -> str:
        return f"Pqa(R={self.R}, n={self.n}, entries={len(self.values())})"


def union(p: Pqa, q: Pqa) -> list[list[tuple[int, int, int]]]:
    """Per queue, the united entries as (tag, value in P, value in Q); absent is 0."""
    if (p.R, p.n) != (q.R, q.n):
        raise ValueError(f"cannot unite PQAs of shape (R, n) = {(p.R, p.n)} and {(q.R, q.n)}")
    united = []
    for queue_p, queue_q in zip(p.queues, q.queues):
        q_values = {tag: value for tag, value in queue_q if value}
        entries = [(tag, value, q_values.get(tag, 0)) for tag, value in queue_p if value]
        p_tags = {tag for tag, _, _ in entries}
        entries += [(tag, 0, value) for tag, value in queue_q if value and tag not in p_tags]
        united.append(entries)
    return united

