"""The application room (see the server's docstring for its place)."""
