// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

import {BatchTokenTransfer, X402DepositCollectorBase} from "./X402DepositCollectorBase.sol";

/// @notice The EIP-3009 call the collector makes (the bytes-signature form, as USDC v2.2).
interface IERC3009Receive {
    function receiveWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        bytes calldata signature
    ) external;
}

/// @title ERC3009DepositCollector
/// @notice A TEST re-implementation of the x402 batch-settlement EIP-3009 deposit collector:
///         pulls a deposit with the payer's `ReceiveWithAuthorization` and forwards it to the
///         settlement contract.
/// @dev    Placed with `anvil_setCode` at 0x4020806089470a89826cB9fB1f4059150b550004.
///         `receiveWithAuthorization` (not `transferWithAuthorization`) because the token then
///         requires the caller to be the payee: only this collector can use the authorization.
contract ERC3009DepositCollector is X402DepositCollectorBase {
    /// @param collectorData `abi.encode(validAfter, validBefore, salt, signature)`.
    function collect(
        address payer,
        address token,
        uint256 amount,
        bytes32 channelId,
        bytes calldata collectorData
    ) external override onlyX402BatchSettlement {
        (uint256 validAfter, uint256 validBefore, uint256 salt, bytes memory signature) =
            abi.decode(collectorData, (uint256, uint256, uint256, bytes));
        // The nonce binds the authorization to this channel, so it cannot fund another one.
        bytes32 nonce = keccak256(abi.encode(channelId, salt));
        IERC3009Receive(token).receiveWithAuthorization(
            payer, address(this), amount, validAfter, validBefore, nonce, signature
        );
        BatchTokenTransfer.safeTransfer(token, x402BatchSettlement, amount);
    }
}
