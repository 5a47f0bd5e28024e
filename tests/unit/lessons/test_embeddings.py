import math

import pytest
import torch
import torch.nn.functional as F

from llmviz.lessons.embeddings import (
    EmbeddingError,
    analogy,
    cosine_matrix,
    cosine_parts,
    distance_matrix,
    euclidean,
    lookup,
    nearest_neighbours,
    one_hot_lookup,
    parse_vector,
    pca,
    sinusoidal_encoding,
)
from llmviz.models.word2vec import train_word2vec

SEED_VECTORS = [torch.tensor([0.2, 0.4, 0.9]), torch.tensor([0.1, 0.5, 0.8]), torch.tensor([0.7, 0.2, 0.1])]


def test_cosine_and_distance_against_torch():
    for a in SEED_VECTORS:
        for b in SEED_VECTORS:
            parts = cosine_parts(a, b)
            assert parts.cosine == pytest.approx(float(F.cosine_similarity(a.double(), b.double(), dim=0)), abs=1e-12)
            assert parts.euclidean == pytest.approx(float(torch.cdist(a[None].double(), b[None].double())), abs=1e-12)
            assert euclidean(a, b) == pytest.approx(parts.euclidean)


def test_seed_example_by_hand():
    # 0.2² + 0.4² + 0.9² = 0.04 + 0.16 + 0.81 = 1.01 (the seed wrote 0.2 for 0.2²)
    parts = cosine_parts(SEED_VECTORS[0], SEED_VECTORS[1])
    assert parts.dot == pytest.approx(0.02 + 0.20 + 0.72)
    assert parts.norm_a == pytest.approx(math.sqrt(1.01))
    assert parts.cosine == pytest.approx(0.94 / math.sqrt(1.01 * 0.90))


def test_matrices_against_torch():
    torch.manual_seed(0)
    vectors = torch.randn(6, 5)
    expected = F.cosine_similarity(vectors[:, None], vectors[None, :], dim=-1)
    torch.testing.assert_close(cosine_matrix(vectors), expected, atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(distance_matrix(vectors), torch.cdist(vectors, vectors), atol=1e-5, rtol=1e-5)


def test_sinusoidal_against_the_formula():
    pe = sinusoidal_encoding(50, 16)
    for pos in (0, 1, 7, 49):
        for i in range(8):
            assert float(pe[pos, 2 * i]) == pytest.approx(math.sin(pos / 10000 ** (2 * i / 16)), abs=1e-6)
            assert float(pe[pos, 2 * i + 1]) == pytest.approx(math.cos(pos / 10000 ** (2 * i / 16)), abs=1e-6)
    odd = sinusoidal_encoding(3, 5)  # an odd width ends with a sine
    assert float(odd[2, 4]) == pytest.approx(math.sin(2 / 10000 ** (4 / 5)), abs=1e-6)


def test_one_hot_product_equals_lookup():
    torch.manual_seed(1)
    matrix = torch.randn(30, 8)
    ids = [3, 0, 29, 3]
    torch.testing.assert_close(one_hot_lookup(matrix, ids), lookup(matrix, ids))


def test_bad_inputs():
    with pytest.raises(EmbeddingError, match="different lengths"):
        cosine_parts(torch.ones(3), torch.ones(2))
    with pytest.raises(EmbeddingError, match="undefined"):
        cosine_parts(torch.zeros(3), torch.ones(3))
    with pytest.raises(EmbeddingError, match="not a number"):
        parse_vector("0.1, abc, 3")
    with pytest.raises(EmbeddingError, match="empty"):
        parse_vector("  ")
    with pytest.raises(EmbeddingError, match="two points"):
        pca(torch.ones(1, 4))
    assert parse_vector("[0.2, 0.4 0.9]").tolist() == pytest.approx([0.2, 0.4, 0.9])


def test_pca_finds_the_main_direction():
    torch.manual_seed(2)
    t = torch.randn(200, 1)
    points = torch.cat([t * 10, t * 10, torch.randn(200, 1) * 0.1], dim=1)
    coords, ratio = pca(points, 2)
    assert coords.shape == (200, 2) and ratio[0] > 0.99


def test_pca_equals_scikit_learn():
    """Coordinates and explained-variance ratios as scikit-learn's PCA gives them (each axis up to its sign,
    which PCA leaves free), on correlated points like an embedding table's rows."""
    from sklearn.decomposition import PCA

    torch.manual_seed(3)
    points = torch.randn(300, 6) @ torch.randn(6, 6) + torch.randn(6) * 5  # correlated, off-centre
    for dims in (2, 3):
        coords, ratio = pca(points, dims)
        reference = PCA(n_components=dims, svd_solver="full").fit(points.double().numpy())
        expected = torch.from_numpy(reference.transform(points.double().numpy())).float()
        signs = torch.sign((coords * expected).sum(dim=0))  # align each axis's sign
        assert torch.allclose(coords * signs, expected, atol=1e-4)
        assert torch.allclose(ratio.double(), torch.from_numpy(reference.explained_variance_ratio_), atol=1e-6)


def test_nearest_and_analogy():
    matrix = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [-1.0, 0.0]])
    assert nearest_neighbours(matrix, torch.tensor([1.0, 0.1]), k=1)[0][0] == 0
    # row2 − row1 + row3 = (1,1) − (0,1) + (−1,0) = (0,0)... pick a cleaner one: row0 − row3 + row1 = (2, 1)
    assert analogy(matrix, 0, 3, 1, k=1)[0][0] == 2


@pytest.mark.slow  # trains word2vec
def test_word2vec_puts_planted_pairs_nearest():
    """Planted co-occurrence: the two words of a pair always appear between the same two context
    words (and never elsewhere), so skip-gram must give them the nearest vectors."""
    import random

    rng = random.Random(0)
    planted = {
        ("cat", "dog"): ("pets", "home"),
        ("car", "bus"): ("road", "city"),
        ("apple", "pear"): ("fruit", "eat"),
        ("red", "blue"): ("colour", "paint"),
    }
    filler = ["the", "of", "and", "to", "in", "is", "it", "was"]
    sentences = []
    for _ in range(3000):
        (first, second), (left, right) = rng.choice(list(planted.items()))
        word = rng.choice((first, second))
        sentences.append(f"{rng.choice(filler)} {left} {word} {right} {rng.choice(filler)}")
    *_, state = train_word2vec(" ".join(sentences), dim=16, window=1, steps=800, batch_size=256, lr=0.03)
    vectors = state.model.center.weight.detach()
    vocab = state.vocabulary
    for first, second in planted:
        neighbours = nearest_neighbours(vectors, vectors[vocab.index[first]], k=1, exclude={vocab.index[first]})
        assert vocab.words[neighbours[0][0]] == second, (first, vocab.words[neighbours[0][0]])
