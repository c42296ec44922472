"""OPID: one-pass learning with incremental and decremental features (Hou & Zhou).

- :mod:`.reference`: the readable numpy maths of both stages (the specification, transcribed).
"""
