// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

import {Permit2} from "./Permit2.sol";
import {X402DepositCollectorBase} from "./X402DepositCollectorBase.sol";

/// @notice The EIP-2612 call the collector makes on the payer's token.
interface IERC2612Permit {
    function permit(
        address owner,
        address spender,
        uint256 value,
        uint256 deadline,
        uint8 v,
        bytes32 r,
        bytes32 s
    ) external;
}

/// @title Permit2DepositCollector
/// @notice A TEST re-implementation of the x402 batch-settlement Permit2 deposit collector: the
///         payer signs a Permit2 witness transfer with `DepositWitness(bytes32 channelId)` and
///         this collector (the signed spender) has Permit2 move the deposit straight to the
///         settlement contract.
/// @dev    Placed with `anvil_setCode` at 0x4020425FAf3B746C082C2f942b4E5159887B0005; Permit2's
///         address is a constant, not set at deployment.
contract Permit2DepositCollector is X402DepositCollectorBase {
    /// @notice The canonical Permit2 address, the same on every chain.
    address public constant PERMIT2 = 0x000000000022D473030F116dDEE9F6B43aC78BA3;

    /// @notice Completes Permit2's PermitWitnessTransferFrom type (referenced types sorted).
    string public constant DEPOSIT_WITNESS_TYPE_STRING =
        "DepositWitness witness)DepositWitness(bytes32 channelId)TokenPermissions(address token,uint256 amount)";

    bytes32 public constant DEPOSIT_WITNESS_TYPEHASH = keccak256("DepositWitness(bytes32 channelId)");

    /// @dev Part of the x402 collector's ABI (a zero Permit2 at deployment); never thrown here.
    error InvalidPermit2Address();
    error Permit2612AmountMismatch();

    /// @notice A failed optional EIP-2612 permit, logged rather than reverted: see collect.
    event EIP2612PermitFailedWithReason(address indexed token, address indexed owner, string reason);
    event EIP2612PermitFailedWithPanic(address indexed token, address indexed owner, uint256 errorCode);
    event EIP2612PermitFailedWithData(address indexed token, address indexed owner, bytes data);

    /// @param collectorData `abi.encode(nonce, deadline, permit2Signature, eip2612PermitData)`;
    ///        `eip2612PermitData` is empty or `abi.encode(value, deadline, v, r, s)`.
    function collect(
        address payer,
        address token,
        uint256 amount,
        bytes32 channelId,
        bytes calldata collectorData
    ) external override onlyX402BatchSettlement {
        (uint256 nonce, uint256 deadline, bytes memory signature, bytes memory permit2612) =
            abi.decode(collectorData, (uint256, uint256, bytes, bytes));
        if (permit2612.length > 0) _tryPermit2612(payer, token, amount, permit2612);
        // Permit2 checks the signature over exactly this token and amount, this spender and the
        // witness; the destination is ours to set, and it can only be the settlement contract.
        Permit2(PERMIT2).permitWitnessTransferFrom(
            Permit2.PermitTransferFrom({
                permitted: Permit2.TokenPermissions({token: token, amount: amount}),
                nonce: nonce,
                deadline: deadline
            }),
            Permit2.SignatureTransferDetails({to: x402BatchSettlement, requestedAmount: amount}),
            payer,
            keccak256(abi.encode(DEPOSIT_WITNESS_TYPEHASH, channelId)),
            DEPOSIT_WITNESS_TYPE_STRING,
            signature
        );
    }

    /// @dev The payer's EIP-2612 approval of Permit2. A failure does not revert: the permit may
    ///      have been applied already (front-running it must not block the deposit) or an
    ///      approval may exist; if neither, Permit2's transfer fails instead. Its value must be
    ///      the deposit, so the permit cannot approve more than the deposit it came with.
    function _tryPermit2612(address payer, address token, uint256 amount, bytes memory data)
        private
    {
        (uint256 value, uint256 deadline, uint8 v, bytes32 r, bytes32 s) =
            abi.decode(data, (uint256, uint256, uint8, bytes32, bytes32));
        if (value != amount) revert Permit2612AmountMismatch();
        try IERC2612Permit(token).permit(payer, PERMIT2, value, deadline, v, r, s) {}
        catch Error(string memory reason) {
            emit EIP2612PermitFailedWithReason(token, payer, reason);
        } catch Panic(uint256 code) {
            emit EIP2612PermitFailedWithPanic(token, payer, code);
        } catch (bytes memory lowLevel) {
            emit EIP2612PermitFailedWithData(token, payer, lowLevel);
        }
    }
}
