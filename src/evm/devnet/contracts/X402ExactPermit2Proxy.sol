// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

import {Permit2} from "./Permit2.sol";
import {X402Permit2ProxyBase} from "./X402Permit2ProxyBase.sol";

/// @title X402ExactPermit2Proxy
/// @notice A TEST re-implementation of the x402 exact Permit2 proxy, ABI-compatible with the
///         `x402ExactPermit2ProxyABI` the x402 EVM package exports: it moves exactly the
///         permitted amount from the payer to the `to` of the signed witness {to, validAfter}.
/// @dev    Placed with `anvil_setCode` at 0x402085c248EeA27D92E8b30b2C58ed07f9E20001. Anyone may
///         call it: the signature fixes payer, token, amount and destination.
contract X402ExactPermit2Proxy is X402Permit2ProxyBase {
    /// @notice Completes Permit2's PermitWitnessTransferFrom type (referenced types sorted).
    string public constant WITNESS_TYPE_STRING =
        "Witness witness)TokenPermissions(address token,uint256 amount)Witness(address to,uint256 validAfter)";

    bytes32 public constant WITNESS_TYPEHASH = keccak256("Witness(address to,uint256 validAfter)");

    struct Witness {
        address to;
        uint256 validAfter;
    }

    /// @notice Settles a payment whose payer has already approved Permit2 on the token.
    function settle(
        Permit2.PermitTransferFrom calldata permit,
        address owner,
        Witness calldata witness,
        bytes calldata signature
    ) external nonReentrant {
        _settleExact(permit, owner, witness, signature);
        emit Settled();
    }

    /// @notice Applies the payer's EIP-2612 approval of Permit2, then settles: one transaction.
    function settleWithPermit(
        EIP2612Permit calldata permit2612,
        Permit2.PermitTransferFrom calldata permit,
        address owner,
        Witness calldata witness,
        bytes calldata signature
    ) external nonReentrant {
        _applyPermit2612(permit.permitted.token, owner, permit2612, permit.permitted.amount);
        _settleExact(permit, owner, witness, signature);
        emit SettledWithPermit();
    }

    function _settleExact(
        Permit2.PermitTransferFrom calldata permit,
        address owner,
        Witness calldata witness,
        bytes calldata signature
    ) private {
        bytes32 witnessHash = keccak256(abi.encode(WITNESS_TYPEHASH, witness.to, witness.validAfter));
        _settle(
            permit,
            permit.permitted.amount,
            owner,
            witness.to,
            witness.validAfter,
            witnessHash,
            WITNESS_TYPE_STRING,
            signature
        );
    }
}
