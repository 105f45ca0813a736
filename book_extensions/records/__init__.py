"""What every code cell printed: recorded per device and per torch release, and compared.

- :mod:`.cell_records`: the records (``results/<device>.json``) and their comparison;
- :mod:`.device_records`: their command (``python -m book_extensions records``: record per
  device, compare CPU with CUDA); command-line layer: no extension imports it;
- :mod:`.release_list`: the torch releases of ``torch-releases.txt`` (standard library only:
  the noxfile imports it before any environment exists);
- :mod:`.release_changes`: what each release printed and what changed between releases, in
  the book (folded notes, the ``{torch-releases}`` directive);
- :mod:`.release_records`: the command (``python -m book_extensions releases``) that records
  the book under the installed torch; command-line layer: no extension imports it.

Imports nothing (see :mod:`.release_list`).
"""
