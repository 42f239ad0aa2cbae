// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// @notice The call x402BatchSettlement makes on a deposit collector: move `amount` of `token`
///         from `payer` to the settlement contract, with `collectorData` as the collector's
///         own proof (signatures, nonces). The settlement contract checks its balance after.
interface IDepositCollector {
    function collect(
        address payer,
        address token,
        uint256 amount,
        bytes32 channelId,
        bytes calldata collectorData
    ) external;
}

/// @notice The ERC-20 calls the batch-settlement contracts make.
interface IBatchToken {
    function balanceOf(address account) external view returns (uint256);
    function transfer(address to, uint256 value) external returns (bool);
}

/// @notice A transfer that accepts tokens returning nothing as well as `true`, and names the
///         token when it fails (the error of OpenZeppelin's SafeERC20, which x402 uses).
library BatchTokenTransfer {
    error SafeERC20FailedOperation(address token);

    function safeTransfer(address token, address to, uint256 value) internal {
        (bool ok, bytes memory result) =
            token.call(abi.encodeCall(IBatchToken.transfer, (to, value)));
        // No code means nothing was transferred, even though the call "succeeded".
        bool done = ok && (result.length == 0 ? token.code.length > 0 : abi.decode(result, (bool)));
        if (!done) revert SafeERC20FailedOperation(token);
    }
}

/// @title X402DepositCollectorBase
/// @notice What the x402 batch-settlement deposit collectors share: only the settlement contract
///         may call `collect`, so nobody can replay a payer's signed pull to a place of their
///         choosing or ahead of the deposit it was signed for.
/// @dev    Placed with `anvil_setCode` (no constructor runs): the settlement contract's address
///         is a constant, exposed under the getter name of the x402 collectors' immutable.
abstract contract X402DepositCollectorBase is IDepositCollector {
    /// @notice The canonical x402BatchSettlement address, the same on every chain.
    address public constant x402BatchSettlement = 0x4020074e9dF2ce1deE5A9C1b5c3f541D02a10003;

    error OnlyX402BatchSettlement();
    /// @dev Part of the x402 collectors' ABI (a deployment with a zero settlement address); never
    ///      thrown here, where the address is a constant.
    error InvalidX402BatchSettlementAddress();

    modifier onlyX402BatchSettlement() {
        if (msg.sender != x402BatchSettlement) revert OnlyX402BatchSettlement();
        _;
    }
}
