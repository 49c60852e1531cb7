"""Simulated time: roadtest owns the guest's clock (UML `time-travel=ext`).

`protocol` is the wire format of include/uapi/linux/um_timetravel.h; `controller`
is the scheduler a guest connects to, running on the backend's event loop so that
the backend's in-band notifications and the guest's time requests are ordered by
one thread; `notify` is what the vhost-user transport asks of time (a `Scheduler`:
`RealTime` or `SimulatedTime`), so that the transport times nothing itself; `clock`
is what models see of time (`Clock`), simulated or the host's.
"""
