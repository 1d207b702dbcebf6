"""What c1 shows on a terminal, for the commands (never the loop, the service or the store).

- :mod:`.console`: where things are printed (rich on stderr, results on stdout), and the escaping of user text.
- :mod:`.live_view`: the live view of a search on stderr, a consumer of the loop's events.
- :mod:`.said_once`: notes said once per index home, and again when they change.
"""
