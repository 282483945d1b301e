"""IRIS over Wyoming: the service (``server``, its ``parts``, ``trust``, ``advert``), the hub
for satellites (``hub``, ``hub_turn``, ``timer_router``) and the satellite (``satellite``,
``ring``). The processes that run them (``iris serve``, ``iris satellite``) live in ``app``."""
