# mutant: tp_row_no_allreduce
# exercise: tp
# replaces: tp_solution
# why: row-parallel adds its partial product and the bias without the all-reduce
class CopyToTP(torch.autograd.Function):
    """f: identity forward, all-reduce (sum) backward."""

    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:
        ### BEGIN SOLUTION
        return x.view_as(x)
        ### END SOLUTION

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:
        ### BEGIN SOLUTION
        grad = grad.contiguous().clone()  # never reduce autograd's buffer in place
        dist.all_reduce(grad)
        return grad
        ### END SOLUTION


class ReduceFromTP(torch.autograd.Function):
    """g: all-reduce (sum) forward, identity backward."""

    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:
        ### BEGIN SOLUTION
        x = x.contiguous().clone()
        dist.all_reduce(x)
        return x
        ### END SOLUTION

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:
        ### BEGIN SOLUTION
        return grad
        ### END SOLUTION


def _shard_size(features: int, what: str) -> int:
    """Features per rank; ValueError when ``features`` does not split evenly over the world."""
    ### BEGIN SOLUTION
    world = dist.get_world_size()
    if features % world:
        raise ValueError(f"{what} = {features} is not divisible by the world size {world}")
    return features // world
    ### END SOLUTION


class ColumnParallelLinear(nn.Module):
    """This rank's block of output features of ``dense``; forward ``linear(f(x), weight, bias)``."""

    def __init__(self, dense: nn.Linear) -> None:
        super().__init__()
        ### BEGIN SOLUTION
        k, r = _shard_size(dense.out_features, "out_features"), dist.get_rank()
        self.weight = nn.Parameter(dense.weight.detach()[r * k:(r + 1) * k].clone())
        self.bias = nn.Parameter(dense.bias.detach()[r * k:(r + 1) * k].clone())
        ### END SOLUTION

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ### BEGIN SOLUTION
        return nn.functional.linear(CopyToTP.apply(x), self.weight, self.bias)
        ### END SOLUTION


class RowParallelLinear(nn.Module):
    """This rank's block of input features of ``dense`` and the whole bias; forward
    ``g(linear(x_shard, weight)) + bias``."""

    def __init__(self, dense: nn.Linear) -> None:
        super().__init__()
        ### BEGIN SOLUTION
        k, r = _shard_size(dense.in_features, "in_features"), dist.get_rank()
        self.weight = nn.Parameter(dense.weight.detach()[:, r * k:(r + 1) * k].clone())
        self.bias = nn.Parameter(dense.bias.detach().clone())  # added once, after the sum
        ### END SOLUTION

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ### BEGIN SOLUTION
        return nn.functional.linear(x, self.weight) + self.bias
        ### END SOLUTION
