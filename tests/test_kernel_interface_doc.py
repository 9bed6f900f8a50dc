"""docs/kernel_interface.md's table of the status registers (STATUS, FRESH, IDENTITY and the
number of identity words of each kernel at its default Params) is what the code gives
(``KernelDesc.status_map()``), so it cannot go stale."""

import re

from kmerspec.kernels import KERNELS, params_class
from sim.runner import REPO_ROOT


def test_the_status_register_table_is_the_code_s():
    text = (REPO_ROOT / "docs" / "kernel_interface.md").read_text()
    rows = re.findall(r"^\| `(\w+)` \| (0x[0-9A-F]+) \| (0x[0-9A-F]+) \| (0x[0-9A-F]+) \| (\d+) \|$",
                      text, flags=re.M)
    documented = {name: (int(error, 16), int(fresh, 16), int(identity, 16), int(words))
                  for name, error, fresh, identity, words in rows}
    derived = {}
    for kernel in KERNELS:
        status = params_class(kernel)().desc.status_map()
        derived[kernel] = (status.error, status.fresh, status.identity, status.identity_words)
    assert documented == derived
