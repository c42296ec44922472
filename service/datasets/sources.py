"""Where every registered data set file comes from: its source URL, size, sha256 and licence.

A data set directory (a mirror named by ``$ACOG_DATASETS_DIR``, or the download cache that
``acog datasets fetch`` fills) holds each :class:`DataFile` at its ``path``. The stored form can
differ from the source's bytes in one documented way (``transform``):

- ``"none"``: the file is the source's bytes; ``sha256`` is checked on the download itself;
- ``"text-xz"``: the source is text; CRLF line ends become LF and runs of empty lines are dropped,
  the result (whose checksum is ``content_sha256``) is stored xz-compressed;
- ``"german-numer"``: derived, not downloaded: the ``data`` matrix of ``german/german.mat``
  written as LIBSVM text (``+1``/``-1``, then ``index:value`` for each non-zero), xz-compressed.

``size`` and ``sha256`` describe the file as a mirror stores it; an xz file re-compressed
elsewhere may differ in its compressed bytes, never in its ``content_sha256``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Transform = Literal["none", "text-xz", "german-numer"]

UCI = "CC BY 4.0 (UCI Machine Learning Repository)"


def github(repo: str, commit: str, path: str) -> str:
    """The raw URL of ``path`` in GitHub repository ``repo`` at ``commit``."""
    return f"https://raw.githubusercontent.com/{repo}/{commit}/{path}"


@dataclass(frozen=True)
class DataFile:
    """One file of a data set directory and how to obtain it."""

    path: str
    size: int
    sha256: str
    url: str
    licence: str
    transform: Transform = "none"
    content_sha256: str | None = None

    @property
    def checked_sha256(self) -> str:
        """The checksum a download (after its transform) must have."""
        return self.content_sha256 if self.content_sha256 is not None else self.sha256


FILES: dict[str, DataFile] = {
    f.path: f
    for f in (
        DataFile(
            "a9a/a9a.xz",
            153_384,
            "c7a2952bcd0877f2c8a6c44b52b1e8086ffff5c4cb1ff9e4d700c97313f2d6a4",
            github("Astraeus-Q/SVM-Classifier", "01842c60893d86dc714fba10b7b483b7f3a61129", "a9a.txt"),
            f"Adult, {UCI}; LIBSVM's binarised a9a",
            "text-xz",
            "f5d5ffd8d865ff41328e7ee043e4b020816914ff6843ff15b98905ddbedce906",
        ),
        DataFile(
            "a9a/a9a.t.xz",
            78_544,
            "062c4d552cafaf641effeb9742e80775d9c5593245da70817ed5c22f3dd9e0bc",
            github("UltramanGaia/ML2017-lab-02", "a83899df9c288a04fb7047dbcbdf1d2eafb28e70", "data/a9a.t"),
            f"Adult, {UCI}; LIBSVM's binarised a9a.t",
            "text-xz",
            "1f448a153f0320399a7e40836eb207655b0bde0f21fc941cc472193daa9f5de9",
        ),
        DataFile(
            "ijcnn1/ijcnn1.trn.bz2",
            1_395_175,
            "b38a4198ce142d43e96fb86d17b87211feec1f909ac344fa057455c69de29de3",
            github(
                "X-DataInitiative/tick-datasets",
                "9d959b6e53e17145e93e9849ff1f9f6d2de8ae51",
                "binary/ijcnn1/ijcnn1.trn.bz2",
            ),
            "IJCNN 2001 challenge data as LIBSVM distributes it; no licence stated",
        ),
        DataFile(
            "ijcnn1/ijcnn1.tst.bz2",
            2_597_597,
            "acd1db430684fdd3f0c768ecc49aa8e749d0004fc117611220c2aa576a7b6a24",
            github(
                "X-DataInitiative/tick-datasets",
                "9d959b6e53e17145e93e9849ff1f9f6d2de8ae51",
                "binary/ijcnn1/ijcnn1.tst.bz2",
            ),
            "IJCNN 2001 challenge data as LIBSVM distributes it; no licence stated",
        ),
        DataFile(
            "mushrooms/mushrooms.xz",
            32_736,
            "7b344f6fd6734b314d89856ad4912143949c3761191e3ee6d9c1bc1e0a675237",
            github("ambroiseodt/tsim", "c80abbd765cdaa57ad2b598583251850ded28e62", "data/mushrooms.txt"),
            f"Mushroom, {UCI}",
            "text-xz",
            "51919a59d92e6ec922259e77afd91d9a809299613ee0da052a19abe746aa2244",
        ),
        DataFile(
            "german/german.mat",
            39_578,
            "90cefeec9ebc8de9702e1e256d31bdcea3dd4d98ab30d542377c6ff3c99163f7",
            github("Vanint/OA3", "af4a71432399863e3237718c013773bba3a4fd30", "OA3_sum/Data/german.mat"),
            f"Statlog (German Credit Data), {UCI}; the 20 permutations from the OA3 code",
        ),
        DataFile(
            "german/german.numer.xz",
            9_132,
            "47985a1d407fc65eb34e9fc868b07f1bc99a6e1244ae72b3f5d93ae3b7a21114",
            "derived from german/german.mat",
            f"Statlog (German Credit Data), {UCI}",
            "german-numer",
            "2de7b80fb3f5216f16ccb5c47c4d8412cbee44191eb1c2801c5d2dfdbeb5a258",
        ),
        DataFile(
            "australian/australian_scale.xz",
            10_016,
            "a9e3654f2c3f77a6de008fb65b0df8d3d7ee2df009e3a070aa3597f33ea45507",
            github("cyyhzb/cyy", "59dde7e2939ac031173d01e6e8a689d902e12b98", "australian_scale.txt"),
            f"Statlog (Australian Credit Approval), {UCI}; LIBSVM's scaling",
            "text-xz",
            "86799bcc4dbcd41929a514fa181d1c1a40e01f009dee139d4141a194d7ecd9e3",
        ),
        DataFile(
            "dna/dna.scale.xz",
            51_160,
            "59cfc70e7502b2b4e95175d4e12d9d1fd68583d865ea6afa3b44dcec64e70413",
            github("zpli0320/dataset", "9d76c73bdf96dd61c1a47ebbcde19131fc1b574c", "dna.scale"),
            f"Molecular Biology (Splice-junction Gene Sequences), StatLog DNA, {UCI}",
            "text-xz",
            "03d39477c5e48415e9cd18e006efc8f7a3b5c3deaee8289a72511c35070e3cfe",
        ),
        DataFile(
            "dna/dna.scale.t.xz",
            32_004,
            "7d27f035d5ab1e96bf8e5492883090a2010b49857d80c5b14830e5caee2dddbe",
            github("zpli0320/dataset", "9d76c73bdf96dd61c1a47ebbcde19131fc1b574c", "dna.scale.t"),
            f"Molecular Biology (Splice-junction Gene Sequences), StatLog DNA, {UCI}",
            "text-xz",
            "d2eeed170e4e38ae2aba6aa4cd27a8ca4ecceb01a7751e8e509bb4e1a6bcef39",
        ),
        DataFile(
            "usps/zip.train.gz",
            1_829_071,
            "66ebf231ab51f2cf6ac1a892d0f98ccffee1079d7a5db638c1f11f366046ca16",
            "https://media.githubusercontent.com/media/robintux/Datasets4StackOverFlowQuestions/"
            "57a571f9d984e0bd730683dfa014751fbc28b1b7/zip.train.gz",
            "USPS digits (Hull 1994) as the ESL book site distributes them; no licence stated",
        ),
        DataFile(
            "oli2ds/wdbc.csv.xz",
            40_988,
            "ef5a31a65a6564c57c6a3a792e94320b1bb7a6c5dbf0f6be642e31e1215ccde2",
            github("youdianlong/OLI2DS", "a6ec5100970e32f051da3ec19f5a0845429549c3", "dataset/wdbc.csv"),
            f"Breast Cancer Wisconsin (Diagnostic), {UCI}",
            "text-xz",
            "84489120eacab0850159f37b86499a5a0363bf2fc15e44fd46d36c765589e9f1",
        ),
        DataFile(
            "oli2ds/credit-a.csv.xz",
            7_332,
            "d765e9ae2c66c3fa63af4840ed545bf17618f19f40a2fec48165e9120e813fb6",
            github("youdianlong/OLI2DS", "08e81ad5494e31476b961bd54b55b993485c182d", "dataset/credit-a.csv"),
            f"Credit Approval, {UCI}",
            "text-xz",
            "424bc9a7bd588b4d45b04892ec05796d998f281e4dfaf1c42e1d19661a079f14",
        ),
        DataFile(
            "oli2ds/splice.csv.xz",
            51_300,
            "2016beb4e5a343f22683dedf209126e4e5f2068f7c9f532cb2b3032457b20460",
            github("youdianlong/OLI2DS", "08e81ad5494e31476b961bd54b55b993485c182d", "dataset/splice.csv"),
            f"Molecular Biology (Splice-junction Gene Sequences), {UCI}",
            "text-xz",
            "b06dde147f7bc8943f212f04d416b605828bb7dbc5f5fc685830eeb17a4b768d",
        ),
    )
}
"""Every file a registered data set reads, by its path in a data set directory."""
