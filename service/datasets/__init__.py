"""Loading the benchmark data sets as canonical CSR matrices with labels in {+1, -1}.

Every loader returns a :class:`Dataset` whose ``X`` is a float64 ``scipy.sparse.csr_matrix`` in
canonical form (sorted column indices, no duplicates, no stored zeros) and whose ``y`` is an int8
array of exactly +1 / -1, **+1 being the anomaly (positive, usually minority) class**.

Formats read
------------
- **LIBSVM / SVMlight text** (plain, ``.gz``, ``.bz2`` or ``.xz``; compression is detected from
  the file's magic bytes): one example a line, ``<label> [qid:<q>] <index>:<value> ...`` with
  1-based indices. Labels may be written ``+1``, ``-1``, ``1.0``, ``2``, ``3``...; trailing
  spaces, CRLF line ends, empty lines and ``#`` comments are tolerated. Test splits can lack the
  highest feature index, so ``n_features=`` fixes the width. Malformed lines raise
  ``ValueError`` naming the file and 1-based line number.
- **MATLAB ``.mat`` in the LIBOL / german layout** (``scipy.io.loadmat``): ``data`` is an
  ``n x (d+1)`` matrix whose first column is the label and whose other columns are the features;
  the optional ``ID_ALL`` is a ``k x n`` matrix of 1-based row permutations, returned 0-based in
  ``Dataset.permutations``.
- **ESL USPS text** (``zip.train[.gz]`` / ``zip.test[.gz]``, recognised by the file name
  ``zip.*``): each line is the digit written as a float, then 256 grey values in [-1, 1].

Label mapping
-------------
Registered names carry their mapping (see :data:`REGISTRY`; each file's source, size, sha256
and licence are in :data:`.sources.FILES`, and ``acog datasets fetch`` downloads them):

=============  ==========================================  ===============================
name           positive (+1)                               negative (-1)
=============  ==========================================  ===============================
a9a, ...       label +1 (a9a, ijcnn1, german, australian)  label -1
mushrooms      label 1 (poisonous)                         label 2
dna            class 1 (EI)                                classes 2 and 3
usps           digit 0                                     digits 1..9
sklearn:       malignant (sklearn target 0)                benign (target 1)
breast_cancer
river:         phishing (river's ``True``, 548 of 1250)    legitimate (``False``, 702)
phishing
=============  ==========================================  ===============================

For any other file, or a registered name loaded with an explicit ``positive_label=``, the raw
labels are mapped by :func:`map_labels`: with ``positive_label`` given, that value is +1 and all
others -1; otherwise labels in {-1, +1} are kept, labels in {0, 1} map 1 -> +1 and 0 -> -1, and
anything else is an error.

Modules: :mod:`.dataset` (the record), :mod:`.labels`, :mod:`.compression`, :mod:`.libsvm`,
:mod:`.dense` (``.mat`` and ESL text), :mod:`.csv_table` (the OLI2DS code's label-last CSV),
:mod:`.registry` (names and :func:`load`), :mod:`.sources` (where each file comes from), :mod:`.fetch`
(the mirror and the download cache) and :mod:`.rows`; for the commands, :mod:`.cli` (``acog
datasets``) and :mod:`.loading` (a data set named on a command line, for ``acog replay`` and the
research package's ``acog evaluate``). Importing the package loads neither.

Only numpy, scipy and the standard library are imported at module level; scikit-learn and
river are imported lazily, inside the ``sklearn:`` and ``river:`` loaders.
"""

from .csv_table import read_label_last_csv
from .dataset import Dataset
from .dense import read_esl_zip, read_mat
from .fetch import CACHE_ENV, DATASETS_ENV, DatasetUnavailable, cache_dir, default_datasets_dir, fetch
from .labels import map_labels
from .libsvm import read_libsvm
from .registry import LAZY_SOURCES, REGISTRY, DatasetSpec, files_of, load
from .rows import iter_rows, l2_normalize

__all__ = [
    "CACHE_ENV",
    "DATASETS_ENV",
    "LAZY_SOURCES",
    "REGISTRY",
    "Dataset",
    "DatasetSpec",
    "DatasetUnavailable",
    "cache_dir",
    "default_datasets_dir",
    "fetch",
    "files_of",
    "iter_rows",
    "l2_normalize",
    "load",
    "map_labels",
    "read_esl_zip",
    "read_label_last_csv",
    "read_libsvm",
    "read_mat",
]
