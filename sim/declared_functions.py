"""What ties an SDK stand-in (sim/xrt_sim.py, sim/f2_sim.py) to the real C library: it offers
exactly the functions the driver declares (host.clib.Prototype tables), each checking its
arguments as the ctypes call on the real library would.

A stand-in derives from :class:`DeclaredFunctions`, sets ``_prototypes`` (the driver's
PROTOTYPES), names the library in ``library`` and ``declared_in`` (for the AttributeError of an
undeclared name), and implements each function ``f`` as a method ``_c_f``; ``_call`` is where
it wraps every call (logging, decoding ctypes values).
"""

import ctypes


class DeclaredFunctions:
    library = "the C library"
    declared_in = "PROTOTYPES"

    def __getattr__(self, name: str):
        prototypes = self.__dict__.get("_prototypes", {})
        if name not in prototypes or not hasattr(type(self), "_c_" + name):
            raise AttributeError(f"{name}: not a function of {self.library} the driver declares "
                                 f"({self.declared_in})")
        prototype, implementation = prototypes[name], getattr(self, "_c_" + name)

        def call(*args):
            check_arguments(name, prototype, args)
            return self._call(name, implementation, args)
        call.__name__ = name
        return call

    def _call(self, name: str, implementation, args: tuple):
        """Run ``implementation`` (the method ``_c_<name>``) on the checked ``args``."""
        return implementation(*args)


def check_arguments(name: str, prototype, args: tuple) -> None:
    """Refuse ``args`` as ctypes refuses them for a function of ``prototype``: a wrong count
    (TypeError), a fixed argument its argtype does not take, a variadic one that is neither an
    int nor a ctypes number (ctypes.ArgumentError)."""
    fixed = len(prototype.argtypes)
    if len(args) < fixed or (len(args) > fixed and not prototype.variadic):
        raise TypeError(f"{name}: this function takes {fixed} arguments ({len(args)} given)")
    for index, (argtype, value) in enumerate(zip(prototype.argtypes, args), 1):
        try:
            argtype.from_param(value)
        except TypeError as error:
            raise ctypes.ArgumentError(f"argument {index}: TypeError: {error}") from None
    for index, value in enumerate(args[fixed:], fixed + 1):
        if not isinstance(value, (int, ctypes._SimpleCData)):
            raise ctypes.ArgumentError(f"argument {index}: TypeError: Don't know how to "
                                       f"convert parameter {index}")
