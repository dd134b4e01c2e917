"""Where kenning's files live: the index a command works on (locate), and the folders kenning tags
as regenerable or keeps in the user's cache (cachedir). Standard library only: the warm-server client
imports this without loading the engine."""
