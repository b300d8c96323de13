# valid: tp_tensor_split
# exercise: tp
# replaces: tp_solution
# why: shards cut with torch.tensor_split / chunk instead of slices, the divisibility checked by a helper that
#      returns nothing, matmul with the transposed weight instead of nn.functional.linear, clone() for f's
#      identity forward and an explicit ReduceOp.SUM: the same shards, shapes, numbers and two all-reduces
class CopyToTP(torch.autograd.Function):
    """f: identity forward, all-reduce (sum) backward."""

    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:
        return x.clone()

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:
        total = grad.clone()
        dist.all_reduce(total, op=dist.ReduceOp.SUM)
        return total


class ReduceFromTP(torch.autograd.Function):
    """g: all-reduce (sum) forward, identity backward."""

    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:
        out = x.clone()
        dist.all_reduce(out, op=dist.ReduceOp.SUM)
        return out

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:
        return grad


def _shard_size(features: int, what: str) -> int:
    """Features per rank; ValueError when ``features`` does not split evenly over the world."""
    n = dist.get_world_size()
    if features % n != 0:
        raise ValueError(f"cannot split {features} {what} over {n} ranks")
    return features // n


class ColumnParallelLinear(nn.Module):
    """This rank's block of output features of ``dense``; forward ``linear(f(x), weight, bias)``."""

    def __init__(self, dense: nn.Linear) -> None:
        super().__init__()
        n, r = dist.get_world_size(), dist.get_rank()
        _shard_size(dense.out_features, "output features")
        self.weight = nn.Parameter(torch.tensor_split(dense.weight.detach(), n, dim=0)[r].clone())
        self.bias = nn.Parameter(torch.tensor_split(dense.bias.detach(), n)[r].clone())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return CopyToTP.apply(x) @ self.weight.t() + self.bias


class RowParallelLinear(nn.Module):
    """This rank's block of input features of ``dense`` and the whole bias; forward
    ``g(linear(x_shard, weight)) + bias``."""

    def __init__(self, dense: nn.Linear) -> None:
        super().__init__()
        n, r = dist.get_world_size(), dist.get_rank()
        _shard_size(dense.in_features, "input features")
        self.weight = nn.Parameter(dense.weight.detach().chunk(n, dim=1)[r].contiguous().clone())
        self.bias = nn.Parameter(dense.bias.detach().clone())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ReduceFromTP.apply(torch.matmul(x, self.weight.t())) + self.bias
