"""Simulated time: roadtest owns the guest's clock (UML `time-travel=ext`).

`protocol` is the wire format of include/uapi/linux/um_timetravel.h; `controller`
is the scheduler a guest connects to, running on the backend's event loop so that
the backend's in-band notifications and the guest's time requests are ordered by
one thread; `clock` is what models see of time (`Clock`), simulated or the host's.
"""
