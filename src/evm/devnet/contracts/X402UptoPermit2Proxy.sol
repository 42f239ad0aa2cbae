// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

import {Permit2} from "./Permit2.sol";
import {X402Permit2ProxyBase} from "./X402Permit2ProxyBase.sol";

/// @title X402UptoPermit2Proxy
/// @notice A TEST re-implementation of the x402 upto Permit2 proxy, ABI-compatible with the
///         `x402UptoPermit2ProxyABI` the x402 EVM package exports: the payer signs a maximum,
///         and the facilitator named in the witness {to, facilitator, validAfter} settles any
///         amount up to it.
/// @dev    Placed with `anvil_setCode` at 0x4020A4f3b7b90ccA423B9fabCc0CE57C6C240002.
contract X402UptoPermit2Proxy is X402Permit2ProxyBase {
    /// @notice Completes Permit2's PermitWitnessTransferFrom type (referenced types sorted).
    string public constant WITNESS_TYPE_STRING =
        "Witness witness)TokenPermissions(address token,uint256 amount)Witness(address to,address facilitator,uint256 validAfter)";

    bytes32 public constant WITNESS_TYPEHASH =
        keccak256("Witness(address to,address facilitator,uint256 validAfter)");

    struct Witness {
        address to;
        address facilitator;
        uint256 validAfter;
    }

    error AmountExceedsPermitted();
    /// @dev Only the facilitator the payer named may choose the amount.
    error UnauthorizedFacilitator();

    /// @notice Moves `amount` (at most the permitted amount) to the witness's `to`.
    function settle(
        Permit2.PermitTransferFrom calldata permit,
        uint256 amount,
        address owner,
        Witness calldata witness,
        bytes calldata signature
    ) external nonReentrant {
        _authorize(permit, amount, witness);
        _settleUpto(permit, amount, owner, witness, signature);
        emit Settled();
    }

    /// @notice Applies the payer's EIP-2612 approval of Permit2 (for the permitted maximum), then
    ///         settles `amount`: one transaction.
    function settleWithPermit(
        EIP2612Permit calldata permit2612,
        Permit2.PermitTransferFrom calldata permit,
        uint256 amount,
        address owner,
        Witness calldata witness,
        bytes calldata signature
    ) external nonReentrant {
        _authorize(permit, amount, witness);
        _applyPermit2612(permit.permitted.token, owner, permit2612, permit.permitted.amount);
        _settleUpto(permit, amount, owner, witness, signature);
        emit SettledWithPermit();
    }

    function _authorize(
        Permit2.PermitTransferFrom calldata permit,
        uint256 amount,
        Witness calldata witness
    ) private view {
        if (amount > permit.permitted.amount) revert AmountExceedsPermitted();
        if (msg.sender != witness.facilitator) revert UnauthorizedFacilitator();
    }

    function _settleUpto(
        Permit2.PermitTransferFrom calldata permit,
        uint256 amount,
        address owner,
        Witness calldata witness,
        bytes calldata signature
    ) private {
        bytes32 witnessHash = keccak256(
            abi.encode(WITNESS_TYPEHASH, witness.to, witness.facilitator, witness.validAfter)
        );
        _settle(
            permit,
            amount,
            owner,
            witness.to,
            witness.validAfter,
            witnessHash,
            WITNESS_TYPE_STRING,
            signature
        );
    }
}
