"""Small foundations the read and write sides share: the bounded caches of an open index (cache) and
the one rule every user-set number is checked by (numbers)."""
