"""What the peers of the CPU benchmarks share: our model names and the run's arguments."""

# Our model name -> the peer networks of the same architecture and our model's class count
# (its defaults: TF-slim's 1001 where the names follow TF-slim, else 1000).
MODELS = {
    "inception_v3": {"torchvision": "inception_v3", "keras": "InceptionV3", "classes": 1001},
    "resnet50": {"torchvision": "resnet50", "keras": "ResNet50", "classes": 1000},
    "mobilenet_v2": {"torchvision": "mobilenet_v2", "keras": "MobileNetV2", "classes": 1001},
    "efficientnet_b0": {"torchvision": "efficientnet_b0", "keras": "EfficientNetB0",
                        "classes": 1000},
    "densenet121": {"torchvision": "densenet121", "keras": "DenseNet121", "classes": 1000},
    "squeezenet1_1": {"torchvision": "squeezenet1_1", "keras": None, "classes": 1000},
}


def models_of(framework):
    """Our model names that `framework` ("torchvision" or "keras") has a network for."""
    return sorted(name for name, peer in MODELS.items() if peer[framework])


def add_run_arguments(parser):
    """--batch, --size, --threads, --warmup and --steps, as every peer and inception_bench take."""
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--size", type=int, default=299)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--steps", type=int, default=5)
