"""Model files: the store that pulls and verifies them (:mod:`.store`), what a GGUF file says about
itself (:mod:`.files`), and the JSON-schema rewrite constrained decoding needs (:mod:`.grammar_schema`).
"""
