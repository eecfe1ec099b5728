"""Documents in, citations out (docs/documents.md): a file becomes chunk memories that cite it.

One module per job: `kinds` tells the type from the content, `limits` bounds a file's size, pages and time,
`blocks` is the structure every extractor produces, `pdf`, `word`, `slides`, `sheets`, `markup` and
`delimited` extract it, `zipguard` checks Office containers before a parser opens them, `ocr` runs
tesseract when it is installed, `chunking` cuts blocks into chunks, `pipeline` runs those steps for one
file (synchronously, in the worker pool) and `service` embeds and stores the chunks (async, no aiohttp).
"""
